"""constraints.txt, the images' one set of packages (scripts/lock_constraints.py writes it),
agrees with pyproject.toml: every runtime dependency (the project's and the `worker`
extra's) is pinned there once, at a version inside pyproject's range; and every pip install
of the Dockerfile goes through it."""

from __future__ import annotations

import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from deploy_helpers import ROOT
from test_deploy_dockerfile import _excluded, _ignore_rules, _installs, parse_dockerfile

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, from PyPI (the test extra pins it for 3.10)
    import tomli as tomllib

CONSTRAINTS = ROOT / "constraints.txt"
# the images' interpreter (the Dockerfile's python:3.11.x bases), for dependency markers
IMAGE_ENV = {"python_version": "3.11", "python_full_version": "3.11.14", "sys_platform": "linux",
             "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
             "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def parse_pins(text: str) -> tuple[dict[str, Version], list[str]]:
    """name -> pinned version, and what is wrong with the file's lines."""
    pins: dict[str, Version] = {}
    problems = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        spec = list(req.specifier)
        if len(spec) != 1 or spec[0].operator != "==" or req.marker or req.extras:
            problems.append(f"line {n}: {line!r} is not a plain name==version pin")
            continue
        name = canonicalize_name(req.name)
        if name in pins:
            problems.append(f"line {n}: {name} is pinned twice")
        pins[name] = Version(spec[0].version)
    return pins, problems


def disagreements(pyproject: dict, constraints_text: str) -> list[str]:
    pins, problems = parse_pins(constraints_text)
    project = pyproject["project"]
    runtime = list(project["dependencies"]) + list(project["optional-dependencies"]["worker"])
    for raw in runtime:
        req = Requirement(raw)
        if req.marker is not None and not req.marker.evaluate(IMAGE_ENV):
            continue  # not installed in the images
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{raw!r}: not pinned in constraints.txt")
        elif not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{raw!r}: constraints.txt pins {name}=={pins[name]}, outside that range")
    return problems


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_constraints_pin_every_runtime_dependency_inside_its_range():
    assert disagreements(_pyproject(), CONSTRAINTS.read_text()) == []
    pins, _ = parse_pins(CONSTRAINTS.read_text())
    # the resolution's closure, not only the direct dependencies: what they pull in is pinned too
    assert {"starlette", "pydantic-core", "anyio", "h11", "sympy"} <= set(pins)
    assert "mambasizer" not in pins


def test_the_check_fails_on_a_disagreement():
    pyproject = _pyproject()
    good = CONSTRAINTS.read_text()
    pins, _ = parse_pins(good)
    lines = good.splitlines()
    # a pin outside the range, a dependency left out, a loose line, a duplicate
    outside = "\n".join("pydantic==3.0.0" if line.startswith("pydantic==") else line for line in lines)
    assert any("pydantic" in p and "outside" in p for p in disagreements(pyproject, outside))
    missing = "\n".join(line for line in lines if not line.startswith("uvicorn=="))
    assert any("uvicorn" in p and "not pinned" in p for p in disagreements(pyproject, missing))
    loose = good + "httpx>=0.27\n"
    assert any("not a plain" in p for p in disagreements(pyproject, loose))
    dup = good + f"psutil=={pins['psutil']}\n"
    assert any("pinned twice" in p for p in disagreements(pyproject, dup))
    # a new dependency in pyproject that the file does not know yet
    grown = {**pyproject, "project": {**pyproject["project"], "dependencies": [*pyproject["project"]["dependencies"], "tenacity>=9"]}}
    assert disagreements(grown, good) == ["'tenacity>=9': not pinned in constraints.txt"]


def test_every_image_install_goes_through_the_constraints():
    stages = parse_dockerfile()
    rules = _ignore_rules()
    assert not _excluded("constraints.txt", rules)
    for name in ("api-build", "worker-build"):
        stage = stages[name]
        assert any("constraints.txt" in arg.split() for arg in stage.all("COPY")), name
        installs = _installs(stage)
        assert installs
        for args in installs:
            assert "constraints.txt" in args and args[args.index("constraints.txt") - 1] in ("-c", "--constraint"), (name, args)


def test_the_torch_pin_is_the_worker_extras():
    (torch,) = [r for r in _pyproject()["project"]["optional-dependencies"]["worker"] if r.startswith("torch")]
    pins, _ = parse_pins(CONSTRAINTS.read_text())
    assert f"torch=={pins['torch']}" == torch
