"""What ships installs and starts: build the wheel from the committed sources, install it
into a fresh venv with the source tree off the path, and run what a user runs.

CI installs the project with `pip install -e`, which reads data files straight from the
checkout; this test is what catches a file the wheel leaves out (the SGLang flag list once
was: an installed `mambasizer serve` crashed at start). The fresh venv gets only the wheel;
its third-party dependencies come from the test interpreter's site-packages through a .pth
line (a .pth inside that directory, such as the editable install's, is not processed), so
`service` and `schemas` can only come from the wheel, and no network is needed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from serving import free_port

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# What a wheel build reads: the packages and their metadata (as the Dockerfile copies them).
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "mambasizer", "service", "schemas")


def _tracked(paths: tuple[str, ...]) -> list[str]:
    """Files git would give a fresh clone (tracked, or new and not ignored) under `paths`."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *paths],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if (ROOT / line).is_file() or (ROOT / line).is_symlink()]


def _clean_env() -> dict[str, str]:
    # PYTHONPATH would put a checkout back on the path (the dev workflow sets it).
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class Installed:
    def __init__(self, root: Path, wheel: Path, venv: Path):
        self.root, self.wheel, self.venv = root, wheel, venv
        self.python = venv / "bin" / "python"
        self.exe = venv / "bin" / "mambasizer"
        self.run_dir = root / "run"
        self.run_dir.mkdir()

    def cli(self, *args: str, timeout: float = 120, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.exe), *args], cwd=self.run_dir, env=_clean_env(), input=stdin,
                              capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    for rel in _tracked(BUILD_INPUTS):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel, follow_symlinks=False)
    dist = root / "dist"
    # No build isolation: setuptools (>=77, the test extra's pin) from this interpreter, offline.
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(dist), str(src)], cwd=root, env=_clean_env(), capture_output=True, text=True,
                           timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("mambasizer-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    inst = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                           "--no-deps", "--no-index", "-q", str(wheel)], cwd=root, env=_clean_env(),
                          capture_output=True, text=True, timeout=600)
    assert inst.returncode == 0, inst.stdout[-3000:] + inst.stderr[-3000:]
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, env=_clean_env()).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "_test_third_party_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return Installed(root, wheel, venv)


def test_wheel_carries_every_data_file_the_license_and_py_typed(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    shipped = ["mambasizer/" + rel for rel in _tracked(("service", "schemas")) if not rel.endswith(".py")]
    missing = [rel for rel in shipped if rel not in names]
    assert missing == [], f"package files left out of the wheel: {missing}"
    for must in ("mambasizer/service/sglang_flags_0_5_23.json", "mambasizer/service/sglang_flags_releases.json",
                 "mambasizer/service/py.typed",
                 "mambasizer/schemas/py.typed", "mambasizer/service/presets/models/kimi-k3.json",
                 "mambasizer/service/presets/models/SOURCES.md", "mambasizer/__init__.py"):
        assert must in names
    # one import package: nothing at the top level but mambasizer/ and its dist-info
    assert {n.split("/")[0] for n in names} == {"mambasizer", "mambasizer-0.1.0.dist-info"}, sorted(names)[:20]
    (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    meta = zipfile.ZipFile(installed.wheel).read(meta_name).decode()
    assert "License-Expression: Apache-2.0" in meta
    assert "License-File: LICENSE" in meta
    (lic,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
    assert b"Apache License" in zipfile.ZipFile(installed.wheel).read(lic)


def test_packages_come_from_the_wheel_only(installed):
    probe = ("import importlib.util, json, mambasizer.service as service, mambasizer.schemas as schemas, "
             "mambasizer.service.sglang_args as a; "
             "assert all(importlib.util.find_spec(n) is None for n in ('service', 'schemas')); "
             "print(json.dumps([service.__file__, schemas.__file__, str(a.FLAGS_FILE)]))")
    out = subprocess.run([str(installed.python), "-c", probe], cwd=installed.run_dir, env=_clean_env(),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    for path in json.loads(out.stdout):
        assert Path(path).resolve().is_relative_to(installed.venv.resolve()), path
    version = installed.cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("mambasizer 0.1.0"), version.stdout + version.stderr


def _source_tree_plan(path: Path) -> dict:
    """The same request planned by the checkout (the reference the wheel must equal)."""
    env = _clean_env()
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-m", "mambasizer.service.cli", "plan", "--json", str(path)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.json") if not p.name.startswith("recommend-")))
def test_plan_every_example(installed, example):
    path = EXAMPLES / example
    shutil.copy2(path, installed.run_dir / example)
    table = installed.cli("plan", example)
    as_json = installed.cli("plan", "--json", example)
    body = json.loads(as_json.stdout)
    expected_rc = 0 if body["feasible"] else 1
    assert table.returncode == expected_rc and as_json.returncode == expected_rc, table.stderr + as_json.stderr
    assert "Traceback" not in table.stderr + as_json.stderr
    assert "SGLang 0.5.23 would" in table.stdout and "None" not in table.stdout
    # byte-for-byte the numbers the source tree computes (data files read the same)
    assert body == _source_tree_plan(path)


def test_check_preset_with_sglang_args(installed):
    ok = installed.cli("check", "--preset", "qwen3-next-80b-a3b-instruct", "--budget-gib", "40", "--",
                       "--tp-size", "4", "--max-running-requests", "64")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("mambasizer check: OK: qwen3-next-80b-a3b-instruct starts under SGLang 0.5.23 "
                                "with max_running_requests=64, max_total_num_tokens=1839937, max_mamba_cache_size=1052")
    # an unknown SGLang flag is a usage error naming it (the flag list is read from the wheel)
    bad = installed.cli("check", "--preset", "qwen3-next-80b-a3b-instruct", "--budget-gib", "40", "--",
                        "--tp-size", "4", "--no-such-flag", "1")
    assert bad.returncode == 2 and "--no-such-flag" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_serve_starts_and_answers(installed):
    shutil.copy2(EXAMPLES / "deployments.yaml", installed.run_dir / "deployments.yaml")
    port = free_port()
    proc = subprocess.Popen([str(installed.exe), "serve", "--host", "127.0.0.1", "--port", str(port),
                             "--deployments", "deployments.yaml"], cwd=installed.run_dir, env=_clean_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"mambasizer serve exited {proc.returncode}: {proc.stderr.read()[-3000:]}")
            try:
                with urllib.request.urlopen(base + "/livez", timeout=2) as resp:
                    assert resp.status == 200
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("mambasizer serve did not answer /livez within 60 s")
                time.sleep(0.3)
        with urllib.request.urlopen(base + "/metrics", timeout=10) as resp:
            metrics = resp.read().decode()
        assert ('mambasizer_plan_max_running_requests{deployment="kimi-k3-pp8",model_name="moonshotai/Kimi-K3",'
                'pp_rank="0"} 1356.0') in metrics
        req = urllib.request.Request(base + "/v1/plan", method="POST", headers={"content-type": "application/json"},
                                     data=(EXAMPLES / "qwen3-next-h200-tp4.json").read_bytes())
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = json.loads(resp.read())
        assert body["max_running_requests"] == 457 and body["max_total_num_tokens"] == 3998554
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("recommend-*.json")))
def test_recommend_every_example(installed, example):
    """The installed `mambasizer recommend` answers the shipped recommend requests as the
    source tree does (the same search, the same re-planned candidates)."""
    shutil.copy2(EXAMPLES / example, installed.run_dir / example)
    disaggregated = example.startswith("recommend-disaggregated-")
    out = installed.cli("recommend", "--json", *(["--disaggregated"] if disaggregated else []), example)
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stderr[-2000:]
    body = json.loads(out.stdout)
    raw = json.loads((EXAMPLES / example).read_text())
    if disaggregated:
        from mambasizer.service.recommend.disaggregated import recommend_disaggregated

        expected = json.loads(recommend_disaggregated(raw).model_dump_json())
        assert body["prefill"] and body["decode"] and body == expected
        return
    from mambasizer.service.recommend import recommend, response_json

    expected = json.loads(response_json(recommend(raw)))
    assert body["candidates"] and body == expected
