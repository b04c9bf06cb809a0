"""Nothing outside service/api/ imports service/api/: the web layer is a client of the request
front door (service/requests/), the solver and the views, never the other way. Every .py under
service/ and schemas/ is read as source (imports inside functions, relative imports and
`importlib.import_module("...")` with a literal name count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
API = ("service", "api")
# The package service/ is imported under (mambasizer.service in this layout, service bare).
PACKAGES = ("mambasizer.service.api", "service.api")
_IMPORTERS = {"import_module", "find_spec", "__import__"}


def _is_api(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in PACKAGES)


def _module_parts(path: Path, root: Path) -> list[str]:
    """`service/sweep.py` -> ["mambasizer", "service"] (the package a relative import starts from)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts if parts[-1] == "__init__" else parts[:-1]
    return ["mambasizer", *[p for p in package if p != "__init__"]]


def api_imports(source: str, path: Path, root: Path = ROOT) -> list[str]:
    """Each import of service/api in `source` (a file at `path`), as `line: name`."""
    found = []
    for node in ast.walk(ast.parse(source, str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = _module_parts(path, root)
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from mambasizer.service import api` names the package through its parent
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in _IMPORTERS and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        hit = next((n for n in names if _is_api(n)), None)
        if hit is not None:
            found.append(f"{getattr(node, 'lineno', 0)}: {hit}")
    return found


def offenders(root: Path = ROOT) -> dict[str, list[str]]:
    out = {}
    for top in ("service", "schemas"):
        for path in sorted((root / top).rglob("*.py")):
            if path.relative_to(root).parts[:2] == API:
                continue
            hits = api_imports(path.read_text(), path, root)
            if hits:
                out[str(path.relative_to(root))] = hits
    return out


def test_nothing_outside_service_api_imports_it():
    assert offenders() == {}


@pytest.mark.parametrize(
    "source",
    [
        "from mambasizer.service.api import wire\n",
        "from mambasizer.service.api.wire import prepare\n",
        "import mambasizer.service.api.app\n",
        "from mambasizer.service import api\n",
        "def f():\n    from mambasizer.service.api import wire\n    return wire\n",
        "from ..api import wire\n",
        "from ..api.wire import prepare\n",
        "import importlib\nimportlib.import_module('mambasizer.service.api.wire')\n",
        "import importlib.util\nimportlib.util.find_spec('mambasizer.service.api.wire')\n",
    ],
)
def test_the_scan_fails_on_an_offending_source(source):
    # As if it were service/cli/check_cmd.py: each spelling of the import is caught.
    assert api_imports(source, ROOT / "service" / "cli" / "check_cmd.py")


@pytest.mark.parametrize(
    "source",
    [
        "from mambasizer.service import requests\n",
        "from mambasizer.service.requests import prepare\n",
        "from ..requests import prepare\n",
        "x = 'mambasizer.service.api.serve_cmd'  # a dispatch table names it, imports nothing\n",
        "from mambasizer.service.apiary import x\n",
    ],
)
def test_the_scan_passes_a_clean_source(source):
    assert api_imports(source, ROOT / "service" / "cli" / "check_cmd.py") == []


def test_the_scan_walks_a_tree_and_names_the_file(tmp_path):
    (tmp_path / "service" / "api").mkdir(parents=True)
    (tmp_path / "schemas").mkdir()
    (tmp_path / "service" / "api" / "plan.py").write_text("from mambasizer.service.api import wire\n")  # inside: fine
    (tmp_path / "service" / "sweep.py").write_text("import json\n\nfrom . import api\n")
    (tmp_path / "schemas" / "x.py").write_text("from mambasizer.service.api.wire import ApiPlanRequest\n")
    assert offenders(tmp_path) == {
        "schemas/x.py": ["1: mambasizer.service.api.wire"],
        "service/sweep.py": ["3: mambasizer.service.api"],
    }
