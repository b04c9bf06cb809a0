"""SGLang releases whose start-up sizing mambasizer reproduces (0.5.8 to 0.5.23).

`registry` names the releases and the accounting epoch each belongs to (from the wheels,
diffed function by function); the per-release switches the pipeline reads live beside it.
"""

from mambasizer.service.solver.releases.registry import (
    DEFAULT_RELEASE,
    SUPPORTED_RELEASES,
    at_least,
    base_release,
    epoch_of,
    release_key,
)

__all__ = ["DEFAULT_RELEASE", "SUPPORTED_RELEASES", "at_least", "base_release", "epoch_of", "release_key"]
