"""`--model-path` read where SGLang reads it: a directory, the HF cache (offline), the Hub (a
fake one on 127.0.0.1, through the real huggingface_hub client): the same plan from all
three, and the plan says what it read. CLI, POST /v1/plan and the resolver itself."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

import ckpt_fixtures as F
from fake_hub import COMMIT, fill_cache
from mambasizer.service.api import wire
from mambasizer.service.api.app import create_app
from mambasizer.service.checkpoints import resolve, serve_policy
from mambasizer.service.cli import main
from mambasizer.service.planner import plan

SIZED = ("fp8", "int4-gptq", "bf16-mtp", "nvfp4-ct")


def _request(path: str) -> dict:
    return {"sglang_args": ["--model-path", path, "--tp-size", "2"], "budget": {"gpu": "h100"}}


def _plan(path: str) -> tuple[dict, dict | None]:
    prepared = wire.prepare(_request(path), allow_trial=False)
    body = json.loads(wire.plan_json(plan(prepared.request)))
    return body, prepared.checkpoint


def _cli(capsys, tmp_path, path: str) -> tuple[int, dict | None, str]:
    req = tmp_path / "req.json"
    req.write_text(json.dumps(_request(path)))
    code = main(["plan", "--json", str(req)])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if out.out.strip() else None), out.err


@pytest.mark.parametrize("scheme", SIZED)
def test_directory_cache_and_hub_size_the_same(scheme, checkpoints, hub, monkeypatch, tmp_path):
    repo_id = F.REPO_IDS[scheme]
    from_dir, ck_dir = _plan(str(checkpoints[scheme]))
    from_hub, ck_hub = _plan(repo_id)
    fill_cache(hub, repo_id, str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    before = len(hub.requests)
    from_cache, ck_cache = _plan(repo_id)
    assert len(hub.requests) == before, "offline: the Hub is not asked"
    assert from_dir == from_hub == from_cache
    assert [ck_dir["source"], ck_cache["source"], ck_hub["source"]] == ["directory", "hf-cache", "hub"]
    assert ck_hub["repo_id"] == ck_cache["repo_id"] == repo_id and ck_hub["revision"] == ck_cache["revision"] == COMMIT
    shards = [f"model-0000{i}-of-00004.safetensors (header)" for i in range(1, 5)]
    for ck in (ck_dir, ck_cache, ck_hub):
        assert ck["files_read"] == ["config.json", "model.safetensors.index.json", *shards]
        assert ck["inventory"] == ck_dir["inventory"]
        assert ck["cross_check"] == ck_dir["cross_check"]
    # The Hub was read by ranged GETs of the safetensors: never a whole weight file.
    for method, path, rng in hub.requests:
        if method == "GET" and path.endswith(".safetensors"):
            assert rng is not None and rng.startswith("bytes="), (path, rng)
    print(f"{scheme}: {ck_dir['cross_check']['note']}")


def test_plan_cli_sizes_a_directory_the_cache_and_the_hub_alike(checkpoints, hub, monkeypatch, tmp_path, capsys):
    code_dir, out_dir, _ = _cli(capsys, tmp_path, str(checkpoints["fp8"]))
    code_hub, out_hub, _ = _cli(capsys, tmp_path, F.REPO_IDS["fp8"])
    fill_cache(hub, F.REPO_IDS["fp8"], str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from mambasizer.service.checkpoints import CACHE

    CACHE.clear()  # the Hub answer was kept; offline, the cache must answer on its own
    code_cache, out_cache, _ = _cli(capsys, tmp_path, F.REPO_IDS["fp8"])
    assert code_dir == code_cache == code_hub == 0
    assert out_dir is not None and out_cache is not None and out_hub is not None
    ck_dir, ck_cache, ck_hub = out_dir.pop("checkpoint"), out_cache.pop("checkpoint"), out_hub.pop("checkpoint")
    assert out_dir == out_cache == out_hub
    assert (ck_dir["source"], ck_cache["source"], ck_hub["source"]) == ("directory", "hf-cache", "hub")
    # FP8 weights, not the BF16 sibling's: 27B at ~1 byte per weight over tp 2.
    weights = out_dir["stages"][0]["weights_bytes"] / 2**30
    assert 13.5 < weights < 15.5, weights


def _api(policy):
    return TestClient(create_app(checkpoints=policy), raise_server_exceptions=False)


def _measured(path: str) -> dict:
    return {"sglang_args": ["--model-path", path, "--tp-size", "2", "--mem-fraction-static", "0.9"],
            "budget": {"gpu": "h100", "free_gib_before_load": 78.5, "free_gib_after_load": 63.0}}


def test_api_sizes_a_root_directory_and_the_hub_alike(checkpoints, hub):
    root = str(checkpoints["fp8"].parent)
    with _api(serve_policy([root], True)) as client:
        a = client.post("/v1/plan", json=_measured(str(checkpoints["fp8"])))
        b = client.post("/v1/plan", json=_measured(F.REPO_IDS["fp8"]))
    assert a.status_code == b.status_code == 200, (a.text, b.text)
    ja, jb = a.json(), b.json()
    assert ja.pop("checkpoint")["source"] == "directory"
    assert jb.pop("checkpoint")["source"] == "hub"
    assert ja == jb


def test_shipped_checkpoint_is_the_fast_path_and_named(hub):
    before = len(hub.requests)
    _, ck = _plan("Qwen/Qwen3.6-27B")
    assert len(hub.requests) == before
    assert ck == {"model_path": "Qwen/Qwen3.6-27B", "source": "shipped", "repo_id": "Qwen/Qwen3.6-27B", "revision": None,
                  "files_read": [], "preset": "qwen3.6-27b"}


def test_compressed_tensors_nvfp4_is_read_and_sized(checkpoints):
    """nvfp4-pack-quantized (unsloth / RadixArk NVFP4): planned, its weights per rank SGLang's
    (tests/conformance/test_checkpoint_fixture_weights.py), below the BF16 checkpoint's."""
    found = resolve(str(checkpoints["nvfp4-ct"]))
    assert found.config["quantization_config"]["format"] == "nvfp4-pack-quantized"
    nvfp4, ck = _plan(str(checkpoints["nvfp4-ct"]))
    bf16, _ = _plan(str(checkpoints["bf16-mtp"]))
    assert ck is not None and ck["cross_check"]["agrees"] is True
    assert nvfp4["stages"][0]["weights_bytes"] == 9_943_995_632  # SGLang's model class at tp 2 (conformance test)
    assert nvfp4["stages"][0]["weights_bytes"] < bf16["stages"][0]["weights_bytes"]


def test_check_cli_sizes_a_directory_and_refuses_an_offline_miss(checkpoints, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MAMBASIZER_TERMINATION_LOG", str(tmp_path / "termination.log"))
    req = tmp_path / "req.json"
    req.write_text(json.dumps(_request(str(checkpoints["fp8"]))))
    assert main(["check", str(req)]) == 0
    out = capsys.readouterr().out
    assert out.strip(), out
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    req.write_text(json.dumps(_request("Qwen/Qwen3.8-27B-FP8")))
    assert main(["check", str(req)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not in the Hugging Face cache" in err[0] and "model.hf_config" in err[0], err


def test_api_estimated_plan_runs_in_the_pool_under_the_server_policy(checkpoints):
    """An estimated budget on a config goes to the work pool (another process): it resolves
    the path again there, under the policy the server passed along with the job."""
    root = str(checkpoints["fp8"].parent)
    body = _request(str(checkpoints["fp8"]))
    with _api(serve_policy([root], False)) as client:
        ok = client.post("/v1/plan", json=body)
        client.app.state.checkpoint_policy = serve_policy([str(checkpoints["fp8"].parent / "elsewhere")], False)
        refused = client.post("/v1/plan", json=body)
    assert ok.status_code == 200, ok.text
    expected, _ = _plan(str(checkpoints["fp8"]))
    got = ok.json()
    assert got.pop("checkpoint")["source"] == "directory"
    got.pop("ignored_sglang_args")
    assert got == expected
    assert refused.status_code == 422 and "outside the server's model roots" in refused.json()["detail"]


def test_a_pool_job_resolves_under_the_policy_it_is_given(checkpoints):
    from mambasizer.service.api import jobs

    body = json.dumps(_request(str(checkpoints["fp8"]))).encode()
    inside = jobs.run("plan", body, "/v1/plan", {jobs.CHECKPOINT_POLICY_OPTION: serve_policy([str(checkpoints["fp8"].parent)], False)})
    outside = jobs.run("plan", body, "/v1/plan", {jobs.CHECKPOINT_POLICY_OPTION: serve_policy([], False)})
    assert inside.status == 200 and json.loads(inside.body)["checkpoint"]["source"] == "directory"
    assert outside.status == 422 and b"no --model-root" in outside.body


def test_resolved_checkpoints_are_a_bounded_cache(checkpoints):
    from mambasizer.service.checkpoints import CACHE

    first = resolve(str(checkpoints["fp8"]))
    assert resolve(str(checkpoints["fp8"])) is first  # served from the cache
    size = CACHE.size
    try:
        CACHE.size = 2
        for scheme in ("int4-gptq", "bf16-mtp"):
            resolve(str(checkpoints[scheme]))
        assert len(CACHE.items) == 2
        assert resolve(str(checkpoints["fp8"])) is not first  # evicted, read again
    finally:
        CACHE.size = size
