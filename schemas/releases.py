"""The SGLang releases a request may name in `sglang_version` (the wire contract's list;
the rules per release live in service/solver/releases/)."""

DEFAULT_RELEASE = "0.5.23"

SUPPORTED_RELEASES: tuple[str, ...] = (
    "0.5.8", "0.5.8.post1", "0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12",
    "0.5.12.post1", "0.5.13", "0.5.13.post1", "0.5.14", "0.5.15", "0.5.15.post1", "0.5.16",
    "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23",
)

# The vLLM releases a request may name in `vllm_version` (engine "vllm"); post-releases size as
# their base. The rules per release live in service/solver/vllm/profiles.py.
VLLM_DEFAULT_RELEASE = "0.34.0"
VLLM_RELEASES: tuple[str, ...] = (
    "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0",
    "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0",
    "0.33.0", "0.34.0",
)
