"""The deployments file: a large reload keeps `/livez` answering (it runs off the event
loop, with the C YAML loader where available), infeasible deployments are logged at warning
with SGLang's error, and a file that cannot be used at start-up is one line and exit 2."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import threading
import time

import httpx
import pytest
import yaml

from mambasizer.service.api import deployments
from mambasizer.service.api.deployments import DeploymentStore
from serving import free_port, mambasizer_command, start_mambasizer

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")


def _entries(n: int) -> str:
    lines = []
    for i in range(n):
        lines.append(f"d{i}:\n  model: {{preset: qwen3-next-80b-a3b-instruct}}\n  server_args: {{tp_size: 4}}\n"
                     f"  budget: {{rest_gib: {20 + i % 40}}}\n")
    return "".join(lines)


def _reloads(port: int) -> dict:
    out = {}
    for line in httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text.splitlines():
        if line.startswith("mambasizer_deployments_reloads_total{"):
            out[line.split('"')[1]] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("mambasizer_deployments_last_reload_success "):
            out["last"] = float(line.rsplit(" ", 1)[1])
    return out


def test_the_c_loader_is_used_where_pyyaml_has_it():
    base = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    assert issubclass(deployments.YAML_LOADER, base)


def test_livez_keeps_answering_while_a_large_file_is_reloaded(tmp_path):
    path = tmp_path / "deployments.yaml"
    path.write_text(_entries(1))
    srv = start_mambasizer("serve", "--deployments", str(path), cwd=tmp_path, log=tmp_path / "stderr.log")
    proc, port, base = srv.proc, srv.port, srv.base
    try:
        for n, outcome in ((1000, "success"), (1001, "failure")):  # 1,001 entries: over the limit, refused
            before = _reloads(port)
            path.write_text(_entries(n))
            answers: list = []
            stop_polling = threading.Event()

            def poll(answers=answers, stop_polling=stop_polling):
                with httpx.Client(timeout=5) as c:  # generous: liveness, not a latency target
                    while not stop_polling.is_set():
                        answers.append(c.get(f"{base}/livez").status_code)
                        time.sleep(0.01)

            poller = threading.Thread(target=poll)
            poller.start()
            try:
                proc.send_signal(signal.SIGHUP)
                deadline = time.monotonic() + 60
                while _reloads(port).get(outcome, 0) == before.get(outcome, 0):
                    assert time.monotonic() < deadline, "the reload did not finish"
                    time.sleep(0.1)
            finally:
                stop_polling.set()
                poller.join(30)
            assert answers and all(code == 200 for code in answers), answers[:20]
            assert proc.poll() is None
        # The refused 1,001-entry file kept the 1,000 planned ones.
        ready = httpx.get(f"{base}/readyz", timeout=10)
        assert _reloads(port)["last"] == 0.0
        text = httpx.get(f"{base}/metrics", timeout=10).text
        assert 'deployment="d999"' in text and 'deployment="d1000"' not in text
        assert ready.status_code in (200, 503)
    finally:
        srv.stop()
    log = srv.log.read_text()
    assert "deployments_reload_failed" in log and "at most 1000" in log


def test_a_burst_of_sighups_is_coalesced(tmp_path):
    path = tmp_path / "deployments.yaml"
    path.write_text(_entries(300))
    srv = start_mambasizer("serve", "--deployments", str(path), cwd=tmp_path, log=tmp_path / "stderr.log")
    proc, port = srv.proc, srv.port
    try:
        for _ in range(20):
            proc.send_signal(signal.SIGHUP)
        time.sleep(0.2)
        deadline = time.monotonic() + 60
        last = -1.0
        while True:  # wait until the count stops moving
            now = _reloads(port)["success"]
            if now == last:
                break
            assert time.monotonic() < deadline
            last = now
            time.sleep(1.5)
        # Start-up + at most one in flight + one folded in (the burst may straddle a reload).
        assert 2 <= last <= 4, last
        assert httpx.get(f"http://127.0.0.1:{port}/livez", timeout=5).status_code == 200
    finally:
        srv.stop()


def test_infeasible_deployments_are_logged_at_warning_with_their_error(tmp_path, caplog):
    path = tmp_path / "d.yaml"
    path.write_text(
        "ok:\n  model: {preset: qwen3-next-80b-a3b-instruct}\n  server_args: {tp_size: 4}\n  budget: {rest_gib: 30}\n"
        "tight:\n  model: {preset: qwen3-next-80b-a3b-instruct}\n  server_args: {tp_size: 4}\n  budget: {rest_gib: 0.1}\n"
    )
    with caplog.at_level(logging.INFO, logger="mambasizer.deployments"):
        snap = DeploymentStore(str(path)).load()
    tight = next(d for d in snap.deployments if d.name == "tight")
    assert tight.plan is not None and not tight.plan.feasible
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    fields = warnings[0].fields
    assert fields["event"] == "deployment_infeasible" and fields["deployment"] == "tight"
    assert fields["error"] == tight.plan.error.message and fields["exception"] == tight.plan.error.exception
    assert fields["kind"] == tight.plan.error.kind


@pytest.mark.parametrize("content,needle", [
    ("[" * 20000 + "]" * 20000, "nest"),  # libyaml: "exceeded maximum nesting depth"; Python: "nested too deeply"
    ("a: [unclosed\n", "not valid YAML"),
    ("- 1\n- 2\n", "must map deployment names"),
    ("a: {model: {preset: p}}\nb: {}\na: {model: {preset: q}}\n", "'a' is given twice"),
    ("a: &x [*x]\nb: {model: {preset: nope}}\n" + "bad name!: {}\n", "deployment name"),
])
def test_an_unusable_file_at_start_up_is_one_line_and_exit_2(tmp_path, content, needle):
    bad = tmp_path / "d.yaml"
    bad.write_text(content)
    out = subprocess.run(mambasizer_command() + ["serve", "--port", str(free_port()), "--deployments", str(bad)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [ln for ln in out.stderr.strip().splitlines() if not ln.startswith("{")]  # JSON log lines aside
    assert len(lines) == 1 and lines[0].startswith("mambasizer: error: --deployments") and needle in lines[0], out.stderr[-2000:]
    assert "Traceback" not in out.stderr


def test_an_entry_the_solver_trips_on_is_invalid_not_fatal(tmp_path, monkeypatch):
    def boom(request):
        raise ZeroDivisionError("internal")

    monkeypatch.setattr(deployments, "plan", boom)
    path = tmp_path / "d.yaml"
    path.write_text("a:\n  model: {preset: qwen3-next-80b-a3b-instruct}\n  budget: {rest_gib: 30}\n")
    snap = DeploymentStore(str(path)).load()
    assert snap.deployments[0].plan is None
    assert "internal error" in snap.deployments[0].error["message"]
    assert "ZeroDivisionError" not in json.dumps(snap.summary())


def test_the_python_loader_fallback_refuses_deep_nesting_with_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(deployments, "YAML_LOADER", deployments._unique_keys(yaml.SafeLoader))  # PyYAML without libyaml
    path = tmp_path / "d.yaml"
    path.write_text("[" * 20000 + "]" * 20000)
    with pytest.raises(deployments.DeploymentsFileError, match="nested too deeply"):
        deployments.build_snapshot(str(path))
