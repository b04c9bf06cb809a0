"""Every error class: status, `application/problem+json`, the failing field's path, the
allowed values where known, and nothing internal."""

from __future__ import annotations

import pytest

from api_helpers import assert_problem, dumps, preset_request
from mambasizer.service.api.problems import BODY_TOO_LARGE, INVALID_INPUT, MALFORMED_JSON
from mambasizer.service.presets import PRESETS
from samples import LAYOUT_8 as LAYOUT

SIZABLE = sorted(p.name for p in PRESETS.values() if p.sizable)
B = {"rest_gib": 30.0}


@pytest.mark.parametrize(
    "body, detail_part",
    [
        (b"{not json", "not valid JSON"),
        (b"", "not valid JSON"),
        (b'{"model": {"preset": "x"}', "not valid JSON"),
        (b"\xff\xfe\x00garbage", "not valid JSON"),
        (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
        (b"[]", "must be a JSON object"),
        (b'"a string"', "must be a JSON object"),
        (b"null", "must be a JSON object"),
    ],
)
def test_malformed_json(client, body, detail_part):
    resp = client.post("/v1/plan", content=body)
    problem = assert_problem(resp, 422, field="request", type_=MALFORMED_JSON)
    assert detail_part in problem["detail"]


@pytest.mark.parametrize(
    "req, field",
    [
        ({**preset_request(), "extra": 1}, "extra"),
        (preset_request(tp=4), "server_args.tp"),
        ({**preset_request(), "env": {"SGLANG_UNKNOWN": "1"}}, "env.SGLANG_UNKNOWN"),
        ({"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "budget": {"rest_gib": 1, "gib": 2}}, "budget.gib"),
    ],
)
def test_unknown_fields_are_named(client, req, field):
    problem = assert_problem(client.post("/v1/plan", json=req), 422, field=field, type_=INVALID_INPUT)
    assert "unknown field" in problem["detail"]
    assert {"field": field, "message": problem["detail"]} in problem["errors"]


# Field paths are JSON paths: pydantic's union tags (`model.layout.layout...`) never show.
def test_unknown_field_inside_the_model_form(client):
    req = {"model": {"preset": "qwen3-next-80b-a3b-instruct", "revision": "main"}, "budget": B}
    problem = assert_problem(client.post("/v1/plan", json=req), 422, field="model.revision")
    assert problem["errors"] == [{"field": "model.revision", "message": problem["detail"]}]


def test_layout_field_path(client):
    layout = dict(LAYOUT, num_hidden_layers=5000, kv={"type": "mha", "num_kv_heads": 8, "head_dim": 0})
    problem = assert_problem(client.post("/v1/plan", json={"model": {"layout": layout}, "budget": B}), 422, field="model.layout.num_hidden_layers")
    assert {e["field"] for e in problem["errors"]} == {"model.layout.num_hidden_layers", "model.layout.kv.head_dim"}


def test_unknown_preset_lists_the_sizable_ones(client):
    problem = assert_problem(client.post("/v1/plan", json=preset_request("no-such-model")), 422, field="model.preset")
    assert "no-such-model" in problem["detail"]
    assert problem["allowed"] == SIZABLE


def test_unverified_preset_is_sized_and_says_so(client):
    """Every preset SGLang 0.5.23 can load is sized; `verified` is reported, not a gate."""
    name = next(p.name for p in PRESETS.values() if p.supported and not p.verified and p.sizable)
    ok = client.post("/v1/plan", json=preset_request(name))
    assert ok.status_code == 200 and ok.json()["feasible"] in (True, False)
    summary = next(e for e in client.get("/v1/presets").json()["presets"] if e["name"] == name)
    assert summary["verified"] is False and summary["sizable"] is True and summary["reason"] is None


def test_preset_sglang_cannot_load_is_refused_with_the_reason(client):
    name = "falcon-h1-1.5b-deep"  # no source states its mamba_d_ssm; SGLang's FalconH1Config refuses it
    assert PRESETS[name].supported and not PRESETS[name].sizable
    problem = assert_problem(client.post("/v1/plan", json=preset_request(name)), 422, field="model.preset")
    assert "cannot load" in problem["detail"] and problem["allowed"] == SIZABLE


def test_unsupported_preset_is_refused(client):
    name = next(p.name for p in PRESETS.values() if not p.supported)
    req = {"model": {"preset": name, "allow_unverified": True}, "budget": B}
    assert_problem(client.post("/v1/plan", json=req), 422, field="model.preset")


def test_unsupported_architecture_lists_the_supported_families(client):
    req = {"model": {"hf_config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}}, "budget": B}
    problem = assert_problem(client.post("/v1/plan", json=req), 422, field="model.hf_config.model_type")
    assert "llama" in problem["detail"]
    for model_type in ("qwen3_next", "nemotron_h", "kimi_linear"):
        assert model_type in problem["detail"]


def test_pp_size_the_family_forbids(client):
    problem = assert_problem(client.post("/v1/plan", json=preset_request(pp_size=2)), 422, field="server_args.pp_size")
    assert problem["allowed"] == ["1"]


@pytest.mark.parametrize("partition", ["10,10", "13,14,0", "a,b", "27"])
def test_layer_partition_that_does_not_match(client, partition):
    req = preset_request("kimi-linear-48b-a3b-instruct", pp_size=2)
    req["env"] = {"SGLANG_PP_LAYER_PARTITION": partition}
    assert_problem(client.post("/v1/plan", json=req), 422, field="env.SGLANG_PP_LAYER_PARTITION")


def test_layer_partition_that_matches_is_used(client):
    req = preset_request("kimi-linear-48b-a3b-instruct", pp_size=2)
    req["env"] = {"SGLANG_PP_LAYER_PARTITION": "14,13"}
    body = client.post("/v1/plan", json=req).json()
    assert [(s["start_layer"], s["end_layer"]) for s in body["stages"]] == [(0, 14), (14, 27)]


@pytest.mark.parametrize(
    "raw, field",
    [
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"budget":{"rest_gib":1e999}}', "budget.rest_gib"),
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"budget":{"rest_gib":-1e999}}', "budget.rest_gib"),
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"budget":{"free_gib_before_load":1e999,"free_gib_after_load":1,"gpu_memory_mib":143771}}', "budget.free_gib_before_load"),
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"budget":{"free_gib_before_load":100,"free_gib_after_load":-1,"gpu_memory_mib":143771}}', "budget.free_gib_after_load"),
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"budget":{"free_gib_before_load":-5,"free_gib_after_load":1,"gpu_memory_mib":143771}}', "budget.free_gib_before_load"),
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"budget":{"rest_gib":1e300}}', "budget.rest_gib"),
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"budget":{"rest_gib":"lots"}}', "budget.rest_gib"),
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"budget":{"free_gib_before_load":100,"free_gib_after_load":90,"gpu_memory_mib":0}}', "budget.gpu_memory_mib"),
        (b'{"model":{"preset":"qwen3-next-80b-a3b-instruct"},"server_args":{"mem_fraction_static":1.5},"budget":{"rest_gib":1}}', "server_args.mem_fraction_static"),
    ],
)
def test_non_finite_negative_or_out_of_range_budgets(client, raw, field):
    assert_problem(client.post("/v1/plan", content=raw), 422, field=field, type_=INVALID_INPUT)


def test_budget_needs_a_form(client):
    assert_problem(client.post("/v1/plan", json=preset_request(budget={})), 422, field="budget")
    assert_problem(client.post("/v1/plan", json={"model": {"preset": "qwen3-next-80b-a3b-instruct"}}), 422, field="budget")


@pytest.mark.parametrize(
    "server_args, field",
    [
        ({"tp_size": 3}, "server_args.tp_size"),  # the GDN conv dimension is not divisible by 3
        ({"tp_size": 4, "attn_dp_size": 3}, "server_args.attn_dp_size"),
        ({"tp_size": 0}, "server_args.tp_size"),
        ({"tp_size": 100000}, "server_args.tp_size"),
        ({"pp_size": 0}, "server_args.pp_size"),
    ],
)
def test_parallel_sizes(client, server_args, field):
    assert_problem(client.post("/v1/plan", json=preset_request(**server_args)), 422, field=field)


def test_literal_fields_list_the_allowed_values(client):
    problem = assert_problem(client.post("/v1/plan", json=preset_request(kv_cache_dtype="fp4")), 422, field="server_args.kv_cache_dtype")
    assert problem["allowed"] == ["auto", "bfloat16", "bf16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16"]


def test_model_needs_exactly_one_form(client):
    req = {"model": {"preset": "qwen3-next-80b-a3b-instruct", "layout": {}}, "budget": B}
    assert_problem(client.post("/v1/plan", json=req), 422, field="model")
    assert_problem(client.post("/v1/plan", json={"budget": B}), 422, field="model")


@pytest.mark.parametrize(
    "change, leaf",
    [
        ({"num_hidden_layers": 5000}, "num_hidden_layers"),
        ({"mamba_layer_ids": [0, 9]}, None),  # outside num_hidden_layers
        ({"mamba_layer_ids": []}, None),
        ({"context_length": 0}, "context_length"),
        ({"kv": {"type": "mha", "num_kv_heads": 0, "head_dim": 128}}, "num_kv_heads"),
    ],
)
def test_layout_bounds(client, change, leaf):
    layout = dict(LAYOUT, **change)
    problem = assert_problem(client.post("/v1/plan", json={"model": {"layout": layout}, "budget": B}), 422)
    assert problem["field"].startswith("model.layout")
    if leaf:
        assert problem["field"].endswith(leaf)


def test_all_failing_fields_are_listed(client):
    req = {"model": {"preset": "qwen3-next-80b-a3b-instruct"}, "server_args": {"tp_size": 0, "pp_size": 0}, "budget": B, "x": 1}
    problem = assert_problem(client.post("/v1/plan", json=req), 422)
    fields = {e["field"] for e in problem["errors"]}
    assert {"server_args.tp_size", "server_args.pp_size", "x"} <= fields


# --------------------------------------------------------------------------- size limits


def test_declared_body_over_1_mib_is_413(client):
    resp = client.post("/v1/plan", content=b" " * ((1 << 20) + 1))
    assert_problem(resp, 413, field=None, type_=BODY_TOO_LARGE)
    assert resp.headers.get("connection") == "close"


def test_streamed_body_over_1_mib_is_413(client):
    def chunks():  # no Content-Length: chunked transfer
        for _ in range(20):
            yield b" " * 65536

    assert_problem(client.post("/v1/plan", content=chunks()), 413, type_=BODY_TOO_LARGE)


def test_body_of_exactly_1_mib_is_read(client):
    body = dumps(preset_request())
    body += b" " * ((1 << 20) - len(body))
    assert len(body) == 1 << 20
    assert client.post("/v1/plan", content=body).status_code == 200


def test_compare_has_the_same_limit(client):
    assert_problem(client.post("/v1/plan/compare", content=b" " * (2 << 20)), 413)


# --------------------------------------------------------------------------- HTTP errors


@pytest.mark.parametrize("path", ["/nope", "/v1/plans", "/v2/plan", "/v1/presetz/x/y"])
def test_404_is_a_problem(client, path):
    problem = assert_problem(client.get(path), 404, field=None, type_="about:blank")
    assert problem["instance"] == path


@pytest.mark.parametrize(
    "method, path, allow",
    [("GET", "/v1/plan", "POST"), ("PUT", "/plan", "POST"), ("DELETE", "/v1/plan/compare", "POST"), ("POST", "/v1/presets", "GET"), ("POST", "/livez", "GET, HEAD")],
)
def test_405_is_a_problem_with_allow(client, method, path, allow):
    resp = client.request(method, path)
    problem = assert_problem(resp, 405, field=None)
    assert resp.headers["allow"] == allow
    assert problem["allowed"] == allow.split(", ")


def test_internal_error_is_a_bare_500_problem(monkeypatch, client):
    import mambasizer.service.api.plan as plan_route

    def boom(request):
        raise RuntimeError("secret detail at /work/main/service/solver/plan.py line 1")

    monkeypatch.setattr(plan_route, "plan", boom)
    resp = client.post("/v1/plan", json=preset_request())
    problem = assert_problem(resp, 500, field=None)
    assert "secret" not in resp.text
    assert problem["title"] == "Internal Server Error"


def test_errors_are_counted_by_status(client):
    client.post("/v1/plan", content=b"{")
    client.get("/nope")
    text = client.get("/metrics").text
    assert 'mambasizer_http_requests_total{method="POST",route="/v1/plan",status="422"} 1.0' in text
    assert 'mambasizer_http_requests_total{method="GET",route="unmatched",status="404"} 1.0' in text


# --------------------------------------------------------------------------- strict numbers
# Integers are integers: `"4"`, `4.5` and `true` are refused by name (issue 10 §4), in every
# int field of the request (these are a sample; the schema declares them all StrictInt).
# `4.0` is the JSON integer 4, as JSON Schema's "integer" says (test_integral_numbers_are_integers).
@pytest.mark.parametrize("value", ["4", True, 4.5, "0x4"])
@pytest.mark.parametrize(
    "where, field",
    [
        ("server_args", "tp_size"),
        ("server_args", "max_mamba_cache_size"),
        ("server_args", "chunked_prefill_size"),
        ("server_args", "cuda_graph_max_bs_prefill"),
        ("budget", "gpu_memory_mib"),
        ("draft_model", "num_layers"),
    ],
)
def test_integers_are_strict(client, where, field, value):
    req = preset_request()
    if where == "budget":
        req["budget"] = {"free_gib_before_load": 139.6, "free_gib_after_load": 100.0, field: value}
    else:
        req.setdefault(where, {})[field] = value
    problem = assert_problem(client.post("/v1/plan", json=req), 422, field=f"{where}.{field}", type_=INVALID_INPUT)
    assert "valid integer" in problem["detail"]


def test_draft_model_num_layers_false_is_refused(client):
    req = {**preset_request(speculative_algorithm="EAGLE"), "draft_model": {"num_layers": False}}
    assert_problem(client.post("/v1/plan", json=req), 422, field="draft_model.num_layers")


@pytest.mark.parametrize(
    "path, value",
    [
        (("model", "layout", "num_hidden_layers"), "8"),
        (("model", "layout", "context_length"), 32768.5),
        (("model", "layout", "kv", "head_dim"), True),
        (("model", "layout", "state", "temporal_shape"), [128, "64", 128]),
    ],
)
def test_layout_integers_are_strict(client, path, value):
    layout = {**LAYOUT, "kv": dict(LAYOUT["kv"]), "state": dict(LAYOUT["state"])}
    node = layout
    for part in path[2:-1]:
        node = node[part]
    node[path[-1]] = value
    field = ".".join(path) + (".1" if path[-1] == "temporal_shape" else "")
    assert_problem(client.post("/v1/plan", json={"model": {"layout": layout}, "budget": B}), 422, field=field)


def test_floats_take_integers_but_not_strings(client):
    ok = client.post("/v1/plan", json=preset_request(budget={"rest_gib": 30}, mem_fraction_static=None))
    assert ok.status_code == 200, ok.text
    assert ok.json()["rest_gib"] == 30.0
    assert client.post("/v1/plan", json=preset_request(budget={"rest_gib": 30.0})).content == ok.content
    assert_problem(client.post("/v1/plan", json=preset_request(budget={"rest_gib": "30"})), 422, field="budget.rest_gib")
    assert_problem(client.post("/v1/plan", json=preset_request(disable_radix_cache="true")), 422, field="server_args.disable_radix_cache")


def test_free_memory_after_load_above_before_is_refused_by_name(client):
    budget = {"free_gib_before_load": 60.0, "free_gib_after_load": 70.5, "gpu_memory_mib": 81559}
    problem = assert_problem(client.post("/v1/plan", json=preset_request(budget=budget)), 422, field="budget.free_gib_after_load", type_=INVALID_INPUT)
    assert "free_gib_before_load=60.0" in problem["detail"] and "70.5" in problem["detail"]
    # Equal figures (weights that took nothing) are still sized.
    equal = client.post("/v1/plan", json=preset_request(budget={**budget, "free_gib_after_load": 60.0}))
    assert equal.status_code == 200, equal.text


def test_pp_size_above_the_layer_count_is_refused_by_name(client):
    # LAYOUT has 8 layers: SGLang's make_layers asserts num_hidden_layers >= pp_size.
    req = {"model": {"layout": LAYOUT}, "budget": B, "server_args": {"pp_size": 9}}
    problem = assert_problem(client.post("/v1/plan", json=req), 422, field="server_args.pp_size", type_=INVALID_INPUT)
    assert "num_hidden_layers=8" in problem["detail"]
    req["server_args"]["pp_size"] = 8
    assert client.post("/v1/plan", json=req).status_code == 200


# --------------------------------------------------------------------------- layout architecture
def test_layout_architecture_outside_the_modelled_ones_is_refused_by_name(client):
    req = {"model": {"layout": {**LAYOUT, "architecture": "MambaForCausalLM"}}, "budget": B}
    problem = assert_problem(client.post("/v1/plan", json=req), 422, field="model.layout.architecture", type_=INVALID_INPUT)
    assert "NemotronHForCausalLM" in problem["allowed"] and "MambaForCausalLM" not in problem["allowed"]


def test_layout_architecture_must_have_the_layouts_mixer(client):
    req = {"model": {"layout": {**LAYOUT, "linear_kind": "gdn", "architecture": "NemotronHForCausalLM"}}, "budget": B}
    problem = assert_problem(client.post("/v1/plan", json=req), 422, field="model.layout.architecture")
    assert "Qwen3NextForCausalLM" in problem["detail"]


def test_layout_ssm_dtype_refused_where_the_architecture_does_not_read_it(client):
    layout = {**LAYOUT, "architecture": "GraniteMoeHybridForCausalLM", "mamba_ssm_dtype": "bfloat16"}
    problem = assert_problem(client.post("/v1/plan", json={"model": {"layout": layout}, "budget": B}), 422, field="model.layout.mamba_ssm_dtype")
    assert "server_args.mamba_ssm_dtype" in problem["detail"]


@pytest.mark.parametrize(
    "architecture, server_args, strategy, ratio",
    [
        # Nemotron-H takes extra_buffer: auto with overlap on picks it (ratio 1 + 2 buffers + overlap).
        (None, {}, "extra_buffer", 5),
        # PP turns overlap off only after the strategy resolved: still extra_buffer, 4 slots.
        (None, {"pp_size": 2}, "extra_buffer", 4),
        # LFM2 is not an extra-buffer architecture: auto -> no_buffer, overlap off.
        ("Lfm2ForCausalLM", {}, "no_buffer", 3),
    ],
)
def test_layout_resolves_its_radix_strategy_as_its_architecture(client, architecture, server_args, strategy, ratio):
    layout = dict(LAYOUT, **({"architecture": architecture} if architecture else {}))
    body = client.post("/v1/plan", json={"model": {"layout": layout}, "budget": B, "server_args": server_args}).json()
    assert body["family"] == ("lfm2" if architecture else "nemotron_h")
    assert (body["resolved"]["mamba_radix_cache_strategy"], body["mamba_ratio"]) == (strategy, ratio)


def test_layout_no_buffer_with_overlap_on_is_refused_as_sglang_refuses_it(client):
    req = {"model": {"layout": LAYOUT}, "budget": B, "server_args": {"mamba_radix_cache_strategy": "no_buffer"}}
    body = client.post("/v1/plan", json=req).json()
    assert body["feasible"] is False and body["error"]["kind"] == "launch_rejected"
    assert body["error"]["message"].startswith("no_buffer do not support overlap schedule")


def test_layout_pp_on_an_architecture_that_asserts_pp_1_is_refused(client):
    req = {"model": {"layout": {**LAYOUT, "architecture": "FalconH1ForCausalLM"}}, "budget": B, "server_args": {"pp_size": 2}}
    assert_problem(client.post("/v1/plan", json=req), 422, field="server_args.pp_size")


def test_integral_numbers_are_integers(client):
    """JSON has one number type: `4.0` is the integer 4 (JSON Schema's "integer", which the
    OpenAPI document declares, includes it), so it sizes exactly as `4` does."""
    as_int = client.post("/v1/plan", json={**preset_request(), "server_args": {"tp_size": 4}})
    as_float = client.post("/v1/plan", json={**preset_request(), "server_args": {"tp_size": 4.0}})
    assert as_int.status_code == as_float.status_code == 200
    assert as_float.json() == as_int.json()
