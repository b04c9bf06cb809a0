"""vLLM's start-up sizing of hybrid models (one shared block pool), beside SGLang's pipeline
and behind the same `plan()`. Pure like the rest of the solver; per-release rules are data
(profiles.py). See pipeline.py for the stages."""

from mambasizer.service.solver.vllm.pipeline import plan_vllm

__all__ = ["plan_vllm"]
