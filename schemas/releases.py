"""The SGLang releases a request may name in `sglang_version` (the wire contract's list;
the rules per release live in service/solver/releases/)."""

DEFAULT_RELEASE = "0.5.23"

SUPPORTED_RELEASES: tuple[str, ...] = (
    "0.5.8", "0.5.8.post1", "0.5.9", "0.5.10", "0.5.10.post1", "0.5.11", "0.5.12",
    "0.5.12.post1", "0.5.13", "0.5.13.post1", "0.5.14", "0.5.15", "0.5.15.post1", "0.5.16",
    "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23",
)
