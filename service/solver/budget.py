"""The rest R0 handed to the mamba split (`_profile_available_bytes`), and the
non-positive-rest error SGLang raises after it."""

from __future__ import annotations

import math

from mambasizer.service.solver.errors import SGLangStartupError

VLM_CACHE_SIZE_MB = 100  # SGLANG_VLM_CACHE_SIZE_MB default: multimodal reservation
MM_FEATURE_CACHE_MB = 1024  # SGLANG_MM_FEATURE_CACHE_MB default: the CUDA-IPC / VMM feature-transport pool


def multimodal_reservation_gib(is_multimodal: bool, cuda_ipc: bool = False) -> float:
    """`mm_runtime_reservation_gb`: the embedding cache, plus the feature-transport pool when
    the transport is cuda_ipc (SGLANG_USE_CUDA_IPC_TRANSPORT=1, the legacy spelling of
    --mm-feature-transport cuda_ipc), on multimodal models only."""
    if not is_multimodal:
        return 0.0
    return (VLM_CACHE_SIZE_MB + (MM_FEATURE_CACHE_MB if cuda_ipc else 0)) / 1024


def rest_gib(free_before: float, free_after: float, mem_fraction_static: float, is_multimodal: bool, cuda_ipc: bool = False) -> float:
    # Slack = what mem_fraction_static keeps back of the pre-load free memory for
    # activations, CUDA graphs, NCCL and the req-to-token table.
    slack = free_before * (1 - mem_fraction_static)
    return free_after - slack - multimodal_reservation_gib(is_multimodal, cuda_ipc)


def no_memory_for_kv(free_before: float | None, free_after: float | None, mem_fraction_static: float | None, rest_after: float) -> SGLangStartupError:
    if free_before is None or free_after is None or mem_fraction_static is None:
        message = (
            "Loaded weights leave no GPU memory for the KV cache: "
            f"{rest_after:.4f} GiB remain after the mamba state pool."
        )
    else:
        minimum = 1 - free_after / free_before
        suggested = math.ceil(minimum * 1000) / 1000
        message = (
            "Loaded weights leave no GPU memory for the KV cache under "
            f"--mem-fraction-static={mem_fraction_static}. "
            f"Raise --mem-fraction-static above {suggested:.3f} "
            f"(minimum viable = 1 - available/pre = {minimum:.4f}). If using speculative "
            "decoding, draft weights are now counted."
        )
    return SGLangStartupError("no_memory_for_kv", "ValueError", message)
