"""`mambasizer check --upgrade-to VERSION`: the deployment planned at its own release and at
VERSION; exit 1 with one line per failure when VERSION would not start it, or loses more than
--max-capacity-loss of its requests / KV tokens or --max-slack-loss of the memory left outside
the pools. The figures are the solver's (README "What an upgrade changes")."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from mambasizer.service.cli import main
from mambasizer.service.planner import plan

# Nemotron-H-56B TP 2 x PP 4 at --mem-fraction-static 0.88 on 110 GiB free after load:
# 0.5.17's per-stage charge moves the old over-charge into the mamba pool.
NEMOTRON = {"model": {"preset": "nemotron-h-56b-base-8k"}, "server_args": {"tp_size": 2, "pp_size": 4, "mem_fraction_static": 0.88},
            "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 110.0}, "sglang_version": "0.5.16"}
SLACK_LINE = ("mambasizer check: FAIL: upgrade to SGLang 0.5.23: SGLang 0.5.23 leaves 19.90 GiB outside the pools on pp_rank 1 "
              "where SGLang 0.5.16 left 49.88 GiB: 60.1% of the slack lost (activations, CUDA graphs, NCCL live there), "
              "more than --max-slack-loss 0.5")
TOKENS_LINE = ("mambasizer check: FAIL: upgrade to SGLang 0.5.23: SGLang 0.5.23 plans 8594402 KV tokens (max_total_num_tokens) "
               "where SGLang 0.5.16 plans 8646665: 0.6% lost, more than --max-capacity-loss 0.005")


@pytest.fixture(autouse=True)
def termination_log(tmp_path, monkeypatch):
    path = tmp_path / "termination-log"
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(path))
    return path


def check(tmp_path, capsys, body, *argv):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(body))
    code = main(["check", str(path), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_nemotron_upgrade_loses_more_than_half_the_slack(tmp_path, capsys, termination_log):
    code, out, err = check(tmp_path, capsys, NEMOTRON, "--upgrade-to", "0.5.23")
    assert code == 1 and out == ""
    assert err == SLACK_LINE + "\n"
    assert termination_log.read_text() == SLACK_LINE + "\n"


def test_one_line_per_failure(tmp_path, capsys):
    code, _, err = check(tmp_path, capsys, NEMOTRON, "--upgrade-to", "0.5.23", "--max-capacity-loss", "0.005")
    assert code == 1 and err.splitlines() == [TOKENS_LINE, SLACK_LINE]


def test_within_the_limits_it_passes_with_what_moves(tmp_path, capsys):
    code, out, err = check(tmp_path, capsys, NEMOTRON, "--upgrade-to", "0.5.23", "--max-slack-loss", "0.7")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("mambasizer check: OK: nemotron-h-56b-base-8k starts under SGLang 0.5.16 with max_running_requests=25, "
                               "max_total_num_tokens=8646665, max_mamba_cache_size=103")
    assert lines[1] == ("mambasizer check: OK: upgrade to SGLang 0.5.23: starts with max_running_requests 25 -> 99, "
                        "max_total_num_tokens 8646665 -> 8594402, slack on pp_rank 1 49.88 -> 19.90 GiB")


def test_the_flag_form_takes_sglang_version(tmp_path, capsys):
    code = main(["check", "--preset", "nemotron-h-56b-base-8k", "--budget-gib", "3", "--sglang-version", "0.5.13",
                 "--upgrade-to", "0.5.14", "--", "--tp-size", "2", "--pp-size", "4", "--mem-fraction-static", "0.88"])
    _, err = capsys.readouterr()
    # 0.5.13's no_buffer gives 3 slots to 1 request; 0.5.14's extra_buffer needs 4 per request.
    assert code == 1
    assert err.startswith("mambasizer check: FAIL: upgrade to SGLang 0.5.14: SGLang 0.5.14 would not start what SGLang 0.5.13 "
                          "starts: Hybrid (mamba/linear-attention) state cache is too small to serve any requests. "
                          "max_mamba_cache_size=3, mamba_ratio=4, resulting max_num_reqs=0.")
    assert err.count("\n") == 1


def test_a_release_that_cannot_load_the_model_fails_the_upgrade(tmp_path, capsys):
    kimi = {"model": {"preset": "kimi-k3"}, "server_args": {"tp_size": 8, "pp_size": 8}, "budget": {"rest_gib": 30.0}}
    code, _, err = check(tmp_path, capsys, kimi, "--upgrade-to", "0.5.16")
    assert code == 1
    assert err.startswith("mambasizer check: FAIL: upgrade to SGLang 0.5.16: SGLang 0.5.16 would refuse it: sglang_version: "
                          "SGLang 0.5.16 cannot load KimiK3ForConditionalGeneration")


def test_a_pair_is_judged_per_side(tmp_path, capsys):
    # Qwen3-Next TP 4 1P1D on 30 GiB: 0.5.14 gives each request 5 mamba slots where 0.5.13 gave 3.
    side = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 4}, "budget": {"rest_gib": 30.0}}
    body = {"prefill": side, "decode": side}
    code, out, err = check(tmp_path, capsys, body, "--sglang-version", "0.5.13", "--upgrade-to", "0.5.14")
    before = [plan({**side, "sglang_version": "0.5.13", "server_args": {"tp_size": 4, "disaggregation_mode": r}}) for r in ("prefill", "decode")]
    after = [plan({**side, "sglang_version": "0.5.14", "server_args": {"tp_size": 4, "disaggregation_mode": r}}) for r in ("prefill", "decode")]
    lost = [(b.max_running_requests, a.max_running_requests) for b, a in zip(before, after, strict=True)]
    failing = [r for r, (b, a) in zip(("prefill", "decode"), lost, strict=True) if (b - a) / b > 0.10]
    assert failing, lost
    assert code == 1 and out == ""
    lines = err.splitlines()
    assert [line.split(": ")[3] for line in lines] == [f"{r} side" for r in failing]
    for line, role in zip(lines, failing, strict=True):
        b, a = lost[("prefill", "decode").index(role)]
        assert f"plans {a} running requests (max_running_requests) where SGLang 0.5.13 plans {b}" in line


@pytest.mark.parametrize("argv,fragment", [
    (["--upgrade-to", "0.6.0"], "--upgrade-to: '0.6.0' is not a supported SGLang release; give one of 0.5.8,"),
])
def test_bad_upgrade_input_is_exit_2(tmp_path, capsys, argv, fragment):
    code, out, err = check(tmp_path, capsys, NEMOTRON, *argv)
    assert code == 2 and out == "" and fragment in err and err.count("\n") == 1


def test_a_share_outside_0_1_is_refused_by_name(tmp_path, capsys):
    path = tmp_path / "request.json"
    path.write_text(json.dumps(NEMOTRON))
    with pytest.raises(SystemExit) as exc:
        main(["check", str(path), "--upgrade-to", "0.5.23", "--max-capacity-loss", "1.5"])
    assert exc.value.code == 2
    assert "--max-capacity-loss: expected a share between 0 and 1 (0.1 = a tenth), got '1.5'" in capsys.readouterr().err


class _Planner:
    """A mambasizer service stand-in that plans what it is sent (POST /v1/plan)."""

    def __init__(self):
        self.versions: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                outer.versions.append(body.get("sglang_version"))
                data = plan(body).model_dump_json().encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def test_over_url_the_service_plans_both_releases(tmp_path, capsys):
    with _Planner() as svc:
        code, _, err = check(tmp_path, capsys, NEMOTRON, "--upgrade-to", "0.5.23", "--url", svc.url)
    assert svc.versions == ["0.5.16", "0.5.23"]
    assert code == 1 and err == SLACK_LINE + "\n"
