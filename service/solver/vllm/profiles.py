"""vLLM releases as data: which start-up sizing rule applies in which release.

One row per release the vLLM pipeline sizes (0.20.0 to 0.34.0; post-releases size as their
base). The switches are the accounting epochs of research/VLLM_SIZING.md §12 (E4-E11), each
named for the rule it turns on; the rules themselves live in the sibling modules.
"""

from __future__ import annotations

from typing import NamedTuple

from mambasizer.schemas.releases import VLLM_DEFAULT_RELEASE, VLLM_RELEASES

__all__ = ["EPOCH_RELEASES", "PROFILES", "VLLM_DEFAULT_RELEASE", "VLLM_RELEASES", "VllmProfile"]


class VllmProfile(NamedTuple):
    version: str
    epoch: str
    # CacheConfig.DEFAULT_BLOCK_SIZE (16 until 0.33, 64 in 0.34): the floor of the alignment.
    default_block_size: int
    # Prefix caching on by default for generative hybrids (mamba_cache_mode "align") from 0.28.
    prefix_caching_default: bool
    # Mamba2 layers take one prefill-checkpoint block per request in align mode (0.32+).
    mamba2_checkpoint_block: bool
    # Qwen GDN layers take one (FlashInfer GDN prefill only) and align blocks to 64 (0.33+).
    gdn_checkpoint: bool
    # "GPU KV cache size": concurrency x max_model_len (0.21+) or blocks // groups x block (0.20).
    token_figure: str
    # The block pool's null block is held back in the one-request capacity check (0.29+).
    null_block_reserved: bool
    # The extensible KV cache is on by default on CUDA/ROCm (0.34): sized again after warm-up.
    extensible_kv_cache_default: bool
    # The capacity figures share one log line from 0.28 ("GPU KV cache size: ..., Maximum concurrency ...").
    capacity_one_line: bool
    # The one-request refusal reads "the models's max seq len" until 0.21 (fixed in 0.22).
    models_typo: bool


def _profile(version: str) -> VllmProfile:
    minor = int(version.split(".")[1])
    epoch = {20: "E4", 27: "E6", 28: "E7", 32: "E9", 33: "E10", 34: "E11"}.get(minor) or ("E5" if minor < 27 else "E8")
    return VllmProfile(
        version=version,
        epoch=epoch,
        default_block_size=64 if minor >= 34 else 16,
        prefix_caching_default=minor >= 28,
        mamba2_checkpoint_block=minor >= 32,
        gdn_checkpoint=minor >= 33,
        token_figure="concurrency" if minor >= 21 else "groups",
        null_block_reserved=minor >= 29,
        extensible_kv_cache_default=minor >= 34,
        capacity_one_line=minor >= 28,
        models_typo=minor <= 21,
    )


PROFILES: dict[str, VllmProfile] = {v: _profile(v) for v in VLLM_RELEASES}
# One release per accounting epoch: what CI's conformance runs (the full run takes them all).
EPOCH_RELEASES: tuple[str, ...] = ("0.20.0", "0.24.0", "0.27.0", "0.28.0", "0.29.0", "0.32.0", "0.33.0", "0.34.0")
