"""Every SGLang release from 0.5.8 on, and the accounting epoch it falls in.

Post-releases size exactly as their base release (their diffs touch no sizing function), so
every rule is keyed by the base release. Epochs E1..E14 group releases whose start-up memory
accounting is identical; a rule that changed at a release is written as "from release X on"
with `release_key(v) >= release_key(X)`.
"""

from __future__ import annotations

from mambasizer.schemas.releases import DEFAULT_RELEASE, SUPPORTED_RELEASES

__all__ = ["DEFAULT_RELEASE", "SUPPORTED_RELEASES", "at_least", "base_release", "epoch_of", "release_key"]

# First base release of each accounting epoch.
_EPOCH_STARTS: tuple[tuple[str, str], ...] = (
    ("E1", "0.5.8"), ("E2", "0.5.9"), ("E3", "0.5.10"), ("E4", "0.5.11"), ("E5", "0.5.13"),
    ("E6", "0.5.14"), ("E7", "0.5.15"), ("E8", "0.5.16"), ("E9", "0.5.17"), ("E10", "0.5.18"),
    ("E11", "0.5.19"), ("E12", "0.5.20"), ("E13", "0.5.22"), ("E14", "0.5.23"),
)


# Parsed once at import: every release string a request may name maps to its base release
# and that base's sortable key. Module-level immutable data derived from the constant
# SUPPORTED_RELEASES (never from a request), so the per-call cost of a version check is two
# dict lookups instead of a split and three int() parses (32 of them per 8-stage plan).
_BASE: dict[str, str] = {v: v.split(".post")[0] for v in SUPPORTED_RELEASES}
_KEY: dict[str, tuple[int, ...]] = {v: tuple(int(p) for p in b.split(".")) for v, b in _BASE.items()}


def _unsupported(version: str) -> ValueError:
    return ValueError(f"unsupported SGLang release {version!r}; supported: {', '.join(SUPPORTED_RELEASES)}")


def base_release(version: str) -> str:
    """'0.5.15.post1' -> '0.5.15'. Raises ValueError for a release not in SUPPORTED_RELEASES."""
    try:
        return _BASE[version]
    except (KeyError, TypeError):
        raise _unsupported(version) from None


def release_key(version: str) -> tuple[int, ...]:
    """Sortable key of a base release: '0.5.14' -> (0, 5, 14)."""
    try:
        return _KEY[version]
    except (KeyError, TypeError):
        raise _unsupported(version) from None


def at_least(version: str, first: str) -> bool:
    """True when `version` is `first` or later (post-releases count as their base)."""
    return release_key(version) >= release_key(first)


def epoch_of(version: str) -> str:
    key = release_key(version)
    name = _EPOCH_STARTS[0][0]
    for epoch, start in _EPOCH_STARTS:
        if key >= release_key(start):
            name = epoch
    return name
