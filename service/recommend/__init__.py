"""Recommend: the launch settings that reach a target (a client of the solver's plan())."""

from service.recommend.search import recommend

__all__ = ["recommend"]
