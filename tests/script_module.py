"""A repository script (bench/run.py, scripts/export_openapi.py, tests/deploy/sync.py ...)
imported as a module, for the tests that call its functions; imported by bare name from every
test folder, as serving.py is."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_script(path: Path, name: str) -> ModuleType:
    """The file at `path` executed as module `name`, registered in sys.modules first (as an
    import would: dataclasses and pickling look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
