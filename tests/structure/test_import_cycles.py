"""No import circles among the project's modules (service/, schemas/, bench/), counting the
imports inside functions too: a deferred import hides a circle, it does not break it. And
the layering the structure rests on: the solver imports no presets and no service layer
above it, the worker imports no API."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("service", "schemas", "bench")
# The import package service/ and schemas/ are imported under: their own names, or, where a
# mambasizer/ package holds them (the wheel's layout, /work/rename_recipe.sh), mambasizer.*
PARENT = "mambasizer." if (ROOT / "mambasizer" / "__init__.py").is_file() else ""
BARE = ("service", "schemas") if PARENT else ()


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        prefix = PARENT if pkg in ("service", "schemas") else ""
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[prefix + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _under(path: Path, *parts: str) -> bool:
    return path.relative_to(ROOT).parts[: len(parts)] == parts


BARE_IMPORTS: list[str] = []  # project modules imported by a name the packages no longer have


def _graph() -> dict[str, set[str]]:
    """module -> the project modules it imports. `from pkg import name` is an edge to
    pkg.name when that is a module, else to pkg (its __init__)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for a in node.names:
                    targets.append(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base)
            for t in targets:
                if t.split(".")[0] in BARE:
                    BARE_IMPORTS.append(f"{path.relative_to(ROOT)}: {t}")
                # `import a.b.c` names the deepest project module it reaches
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != mod:
                    graph[mod].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in graph[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_the_graph_sees_deferred_and_package_imports():
    g = _graph()
    # deferred (inside a function): presets resolve their reason through the solver
    assert "mambasizer.service.solver.families" in g["mambasizer.service.presets"]
    # `from mambasizer.service.solver import gpus` is an edge to the module, not to the package
    assert "mambasizer.service.solver.gpus" in g["mambasizer.service.solver.gpu_budget"]
    assert {"mambasizer.service.solver.plan", "mambasizer.service.solver.solve"} <= g["mambasizer.service.solver"]
    # a circle is found when there is one
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    BARE_IMPORTS.clear()
    assert _cycles(_graph()) == []
    assert BARE_IMPORTS == []


def test_layering():
    g = _graph()
    mods = _modules()
    solver = {m for m in g if _under(mods[m], "service", "solver")}
    reached = set().union(*(_reaches(g, m) for m in solver)) - solver
    # the solver reaches nothing but the wire schemas: no presets, API, CLI, worker, planner
    assert {m for m in reached if not _under(mods[m], "schemas")} == set(), sorted(reached)
    worker = {m for m in g if _under(mods[m], "service", "worker")}
    assert not {w for m in worker for w in _reaches(g, m) if _under(mods[w], "service", "api")}
