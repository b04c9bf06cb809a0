"""Recommend: the launch settings that reach a target (a client of the solver's plan())."""

from mambasizer.schemas.recommend import RecommendResponse
from mambasizer.service.recommend.search import recommend


def response_json(result: RecommendResponse) -> bytes:
    """THE encoding of an answer: POST /v1/recommend and `mambasizer recommend --json` both use it."""
    return result.model_dump_json().encode()


__all__ = ["recommend", "response_json"]
