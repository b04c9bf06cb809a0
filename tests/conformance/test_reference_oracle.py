"""The oracle proves itself: driven through `reference_plan`, SGLang 0.5.23's own functions
must reproduce every number SIZING_SPEC §7 (E1..E10) and §3.3 state.

§7 gives F_post and mem_fraction_static per example; F_pre is 139.60 GiB throughout (E1
states it; E3/E4's R0 values confirm it). mem_fraction_static is passed explicitly, so the
§8 errata on the AUTOMATIC fraction do not apply. Radix strategy is extra_buffer (the CUDA
default for these archs) unless stated, and PP forces overlap off.
"""

from __future__ import annotations

import collections
import copy

import pytest

import cases
import sglang_ref

F_PRE = 139.60


def plan(hf, *, f_post, mfs, env=None, draft=None, **sa):
    server_args = {
        "page_size": 1,
        "mamba_radix_cache_strategy": "extra_buffer",
        "disable_overlap_schedule": sa.get("pp_size", 1) > 1,
        "mamba_full_memory_ratio": 0.9,
        "mem_fraction_static": mfs,
    }
    server_args.update(sa)
    req = {
        "model": {"hf_config": hf},
        "server_args": server_args,
        "env": env or {},
        "budget": {"free_gib_before_load": F_PRE, "free_gib_after_load": f_post},
        "draft_model": draft,
    }
    return sglang_ref.reference_plan(req)


@pytest.fixture(scope="module")
def qwen3_next():
    return cases.load_preset("qwen3-next-80b-a3b-instruct")


@pytest.fixture(scope="module")
def kimi_linear():
    return cases.load_preset("kimi-linear-48b-a3b-instruct")


@pytest.fixture(scope="module")
def nemotron_nano_9b():
    return cases.load_preset("nvidia-nemotron-nano-9b-v2")


# --------------------------------------------------------------------------- §7 worked examples


def test_e1_qwen3_next_tp4(qwen3_next):
    o = plan(qwen3_next, f_post=101.30, mfs=0.897, tp_size=4)
    assert o["error"] is None
    assert o["rest_gib"] == pytest.approx(86.9212, abs=1e-9)
    assert o["mamba_cache_per_req_bytes"] == 19_316_736
    assert o["stage_per_req_bytes"] == 19_316_736
    assert o["mamba_ratio"] == 5
    assert o["max_mamba_cache_size"] == 2287
    assert o["kv_budget_bytes"] == 49_134_235_864
    assert o["stages"][0]["kv_cell_bytes"] == 12_288
    assert o["max_total_num_tokens"] == 3_998_554
    assert o["max_running_requests"] == 457
    assert o["pp_max_micro_batch_size"] == 457
    assert any("capped to 457 by the mamba state cache" in w for w in o["warnings"])


def test_e1_skip_decode_lock(qwen3_next):
    o = plan(
        qwen3_next, f_post=101.30, mfs=0.897, tp_size=4,
        env={"SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK": True},
    )
    assert o["mamba_ratio"] == 4
    assert (o["max_mamba_cache_size"], o["max_total_num_tokens"]) == (2287, 3_998_554)
    assert o["max_running_requests"] == 571


def test_e2_qwen3_next_nextn(qwen3_next):
    o = plan(
        qwen3_next, f_post=101.30, mfs=0.897, tp_size=4,
        speculative_algorithm="NEXTN", speculative_num_draft_tokens=4, max_running_requests=48,
        draft={"num_layers": 1},
    )
    assert o["error"] is None
    assert o["max_mamba_cache_size"] == 1268
    assert o["rest_gib"] == pytest.approx(86.9212, abs=1e-9)
    assert o["kv_budget_bytes"] == 65_031_909_592
    assert o["stages"][0]["kv_cell_bytes"] == 13_312
    assert o["max_total_num_tokens"] == 4_885_209
    assert o["max_running_requests"] == 48


def test_e2_errata_5_no_draft_kv_without_num_nextn_predict_layers(qwen3_next):
    # §8.5: Qwen3-Next's config has no num_nextn_predict_layers, so a path-less NEXTN
    # deployment prices no draft KV layer: the cell stays 12,288 B.
    o = plan(
        qwen3_next, f_post=101.30, mfs=0.897, tp_size=4,
        speculative_algorithm="NEXTN", speculative_num_draft_tokens=4, max_running_requests=48,
    )
    assert o["error"] is None
    assert o["max_mamba_cache_size"] == 1268
    assert o["kv_budget_bytes"] == 65_031_909_592
    assert o["stages"][0]["kv_cell_bytes"] == 12_288
    assert o["max_total_num_tokens"] == 65_031_909_592 // 12_288


def test_e3_kimi_linear_tp1(kimi_linear):
    o = plan(kimi_linear, f_post=49.20, mfs=0.896)
    assert o["error"] is None
    assert o["rest_gib"] == pytest.approx(34.6816, abs=1e-9)
    assert o["max_mamba_cache_size"] == 405
    assert o["kv_budget_bytes"] == 19_611_538_843
    assert o["stages"][0]["kv_cell_bytes"] == 8_064
    assert o["max_total_num_tokens"] == 2_431_986
    assert o["max_running_requests"] == 81


def test_e4_kimi_linear_tp2_pp2(kimi_linear):
    o = plan(kimi_linear, f_post=94.0, mfs=0.895, tp_size=2, pp_size=2)
    assert o["error"] is None
    assert o["mamba_ratio"] == 4
    st = o["stages"]
    assert [(s["start_layer"], s["end_layer"]) for s in st] == [(0, 13), (13, 27)]
    assert [s["mamba_layers"] for s in st] == [10, 10]
    assert [s["full_attention_layers"] for s in st] == [3, 4]
    assert o["stage_per_req_bytes"] == 10_854_400
    assert o["max_mamba_cache_size"] == 3716
    assert o["kv_budget_bytes"] == 44_847_018_999
    assert [s["kv_cell_bytes"] for s in st] == [3_456, 4_608]
    assert [s["kv_tokens"] for s in st] == [12_976_567, 9_732_425]
    assert o["max_total_num_tokens"] == 9_732_425
    assert o["max_running_requests"] == 929
    assert o["pp_max_micro_batch_size"] == 464


def test_e5_nemotron_nano_9b_tp1(nemotron_nano_9b):
    o = plan(nemotron_nano_9b, f_post=121.80, mfs=0.903)
    assert o["error"] is None
    assert o["max_mamba_cache_size"] == 382
    assert o["kv_budget_bytes"] == 61_262_958_048
    assert o["stages"][0]["kv_cell_bytes"] == 16_384
    assert o["max_total_num_tokens"] == 3_739_194
    assert o["max_running_requests"] == 76


def test_e6_nemotron_nano_9b_pp2(nemotron_nano_9b):
    o = plan(nemotron_nano_9b, f_post=130.50, mfs=0.902, pp_size=2)
    assert o["error"] is None
    st = o["stages"]
    assert [(s["start_layer"], s["end_layer"]) for s in st] == [(0, 28), (28, 56)]
    assert [s["mamba_layers"] for s in st] == [14, 13]
    assert o["stage_per_req_bytes"] == 74_432_512
    assert o["max_mamba_cache_size"] == 797
    assert o["kv_budget_bytes"] == 66_036_516_310
    assert [s["kv_cell_bytes"] for s in st] == [8_192, 8_192]
    assert o["max_total_num_tokens"] == 8_061_098
    assert o["max_running_requests"] == 199
    assert o["pp_max_micro_batch_size"] == 99


def test_e7_nemotron_nano_9b_pp4_sentinel(nemotron_nano_9b):
    o = plan(nemotron_nano_9b, f_post=135.0, mfs=0.900, pp_size=4)
    assert o["error"] is None
    st = o["stages"]
    assert [s["end_layer"] - s["start_layer"] for s in st] == [14, 14, 14, 14]
    assert max(s["mamba_layers"] for s in st) == 8
    assert o["stage_per_req_bytes"] == 42_532_864
    assert o["max_mamba_cache_size"] == 1446
    # Stages 0 and 3 hold no attention layer: SGLang's int64 sentinel (reported as None).
    assert [s["full_attention_layers"] for s in st] == [0, 2, 2, 0]
    assert [s["kv_tokens"] for s in st] == [None, 8_352_130, 8_352_130, None]
    assert o["max_total_num_tokens"] == 8_352_130
    assert o["max_running_requests"] == 361
    assert o["pp_max_micro_batch_size"] == 90


def test_e8_falcon_h1_1_5b_class():
    o = plan(cases.falcon_h1_1_5b(), f_post=136.30, mfs=0.903)
    assert o["error"] is None
    assert o["max_mamba_cache_size"] == 820
    assert o["kv_budget_bytes"] == 69_404_118_496
    assert o["stages"][0]["kv_cell_bytes"] == 24_576
    assert o["max_total_num_tokens"] == 2_824_060
    assert o["max_running_requests"] == 164


def test_e9_granite_4_h_small_class_tp2():
    o = plan(cases.granite_4_h_small_class(), f_post=108.80, mfs=0.902, tp_size=2)
    assert o["error"] is None
    assert o["max_mamba_cache_size"] == 631
    assert o["kv_budget_bytes"] == 53_824_960_777
    assert o["stages"][0]["kv_cell_bytes"] == 8_192
    assert o["max_total_num_tokens"] == 6_570_429
    assert o["max_running_requests"] == 126


def test_e10_lfm2_1_2b_no_buffer():
    o = plan(
        cases.lfm2_1_2b(), f_post=137.40, mfs=0.903,
        mamba_radix_cache_strategy="no_buffer", disable_overlap_schedule=True,
    )
    assert o["error"] is None
    assert o["mamba_ratio"] == 3
    assert o["mamba_cache_per_req_bytes"] == 81_920
    assert o["max_mamba_cache_size"] == 768_997
    assert o["kv_budget_bytes"] == 69_996_057_670
    assert o["stages"][0]["kv_cell_bytes"] == 12_288
    assert o["max_total_num_tokens"] == 5_696_293
    assert o["max_running_requests"] == 4096


# --------------------------------------------------------------------------- §3.3 family tables

# (tp, conv shape, temporal shape, bytes per request, KV cell at PP=1)
TABLES = {
    "qwen3_next": (
        lambda: cases.load_preset("qwen3-next-80b-a3b-instruct"),
        [
            (1, [8192, 3], [32, 128, 128], 77_266_944, 24_576),
            (2, [4096, 3], [16, 128, 128], 38_633_472, 12_288),
            (4, [2048, 3], [8, 128, 128], 19_316_736, 12_288),
            (8, [1024, 3], [4, 128, 128], 9_658_368, 12_288),
        ],
    ),
    "kimi_linear": (
        lambda: cases.load_preset("kimi-linear-48b-a3b-instruct"),
        [
            (1, [3, 12288], [32, 128, 128], 43_417_600, 8_064),
            (2, [3, 6144], [16, 128, 128], 21_708_800, 8_064),
            (4, [3, 3072], [8, 128, 128], 10_854_400, 8_064),
            (8, [3, 1536], [4, 128, 128], 5_427_200, 8_064),
        ],
    ),
    "nemotron_nano_9b": (
        lambda: cases.load_preset("nvidia-nemotron-nano-9b-v2"),
        [
            (1, [12288, 3], [128, 80, 128], 143_548_416, 16_384),
            (2, [6144, 3], [64, 80, 128], 71_774_208, 8_192),
            (4, [3072, 3], [32, 80, 128], 35_887_104, 4_096),
            (8, [1536, 3], [16, 80, 128], 17_943_552, 2_048),
        ],
    ),
    "falcon_h1_1_5b": (
        cases.falcon_h1_1_5b,
        [
            (1, [3584, 3], [48, 64, 256], 76_013_568, 24_576),
            (2, [2048, 3], [24, 64, 256], 38_043_648, 12_288),
            (4, [1280, 3], [12, 64, 256], 19_058_688, 12_288),
            (8, [896, 3], [6, 64, 256], 9_566_208, 12_288),
        ],
    ),
    "granite_small": (
        cases.granite_4_h_small_class,
        [
            (1, [8448, 3], [128, 64, 128], 152_819_712, 16_384),
            (2, [4352, 3], [64, 64, 128], 76_437_504, 8_192),
            (4, [2304, 3], [32, 64, 128], 38_246_400, 4_096),
            (8, [1280, 3], [16, 64, 128], 19_150_848, 2_048),
        ],
    ),
    "lfm2_1_2b": (
        cases.lfm2_1_2b,
        [
            (1, [2048, 2], [1, 2048, 0], 81_920, 12_288),
            (2, [1024, 2], [1, 2048, 0], 40_960, 6_144),
            (4, [512, 2], [1, 2048, 0], 20_480, 3_072),
        ],
    ),
}


@pytest.mark.parametrize(
    "name,row",
    [(name, row) for name, (_, rows) in TABLES.items() for row in rows],
    ids=lambda v: v if isinstance(v, str) else f"tp{v[0]}",
)
def test_family_tables(name, row):
    tp, conv, temporal, per_req, cell = row
    hf = TABLES[name][0]()
    o = plan(hf, f_post=130.0, mfs=0.9, tp_size=tp)
    assert o["error"] is None, o["error"]
    st = o["stages"][0]
    assert st["conv_shape"] == [conv]
    assert st["temporal_shape"] == temporal
    assert o["mamba_cache_per_req_bytes"] == per_req
    assert st["kv_cell_bytes"] == cell
    assert st["conv_dtype"] == "bfloat16"
    assert st["ssm_dtype"] == "float32"


@pytest.mark.parametrize(
    "where", ["env", "server_arg"]
)
def test_bf16_ssm_halves_the_temporal_state(qwen3_next, where):
    kw = (
        {"env": {"SGLANG_MAMBA_SSM_DTYPE": "bfloat16"}}
        if where == "env"
        else {"mamba_ssm_dtype": "bfloat16"}
    )
    o = plan(qwen3_next, f_post=130.0, mfs=0.9, **kw)
    assert o["stages"][0]["ssm_dtype"] == "bfloat16"
    assert o["mamba_cache_per_req_bytes"] == 36 * (49_152 + 1_048_576)


def test_server_arg_ssm_dtype_wins_over_env(qwen3_next):
    o = plan(
        qwen3_next, f_post=130.0, mfs=0.9, mamba_ssm_dtype="float16",
        env={"SGLANG_MAMBA_SSM_DTYPE": "bfloat16"},
    )
    assert o["stages"][0]["ssm_dtype"] == "float16"


def test_kimi_ignores_config_ssm_dtype(kimi_linear):
    hf = dict(kimi_linear, mamba_ssm_dtype="bfloat16")
    o = plan(hf, f_post=130.0, mfs=0.9)
    assert o["stages"][0]["ssm_dtype"] == "float32"
    assert o["mamba_cache_per_req_bytes"] == 43_417_600


def test_env_is_restored(qwen3_next):
    import os

    before = {k: os.environ.get(k) for k in sglang_ref.ENV_KEYS}
    plan(
        qwen3_next, f_post=130.0, mfs=0.9, mamba_ssm_dtype="float16",
        env={"SGLANG_MAMBA_CONV_DTYPE": "float32", "SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK": True},
    )
    assert {k: os.environ.get(k) for k in sglang_ref.ENV_KEYS} == before


# --------------------------------------------------------------------------- rest_gib form


def test_rest_gib_form_matches_profiler_form(qwen3_next):
    prof = plan(qwen3_next, f_post=101.30, mfs=0.897, tp_size=4)
    rest = sglang_ref.reference_plan(
        {
            "model": {"hf_config": qwen3_next},
            "server_args": {
                "tp_size": 4, "page_size": 1, "mamba_radix_cache_strategy": "extra_buffer",
                "mamba_full_memory_ratio": 0.9,
            },
            "budget": {"rest_gib": prof["rest_gib"]},
        }
    )
    assert rest["rest_gib"] == prof["rest_gib"]  # bit for bit
    for key in ("max_mamba_cache_size", "kv_budget_bytes", "max_total_num_tokens", "max_running_requests"):
        assert rest[key] == prof[key]


def test_rest_gib_is_after_the_multimodal_reservation():
    hf = cases.load_preset("qwen3.5-27b")
    base = {"page_size": 1, "mamba_radix_cache_strategy": "extra_buffer", "mamba_full_memory_ratio": 0.9}
    prof = sglang_ref.reference_plan(
        {
            "model": {"hf_config": hf},
            "server_args": dict(base, mem_fraction_static=0.9),
            "budget": {"free_gib_before_load": 100.0, "free_gib_after_load": 60.0},
        }
    )
    # R0 = F_post - F_pre*(1-mfs) - 100 MiB (Qwen3.5 is multimodal).
    assert prof["rest_gib"] == 60.0 - 100.0 * (1 - 0.9) - 100 / 1024
    rest = sglang_ref.reference_plan(
        {"model": {"hf_config": hf}, "server_args": base, "budget": {"rest_gib": prof["rest_gib"]}}
    )
    assert rest["rest_gib"] == prof["rest_gib"]
    assert rest["kv_budget_bytes"] == prof["kv_budget_bytes"]


# --------------------------------------------------------------------------- §5 errors


def _rest(hf, rest, **sa):
    server_args = {"page_size": 1, "mamba_radix_cache_strategy": "extra_buffer", "mamba_full_memory_ratio": 0.9}
    server_args.update(sa)
    return sglang_ref.reference_plan({"model": {"hf_config": hf}, "server_args": server_args, "budget": {"rest_gib": rest}})


def test_tiny_rest_gives_k_minus_one(qwen3_next):
    o = _rest(qwen3_next, 0.01)
    assert o["error"]["exception"] == "RuntimeError"
    assert "Not enough GPU memory for hybrid" in o["error"]["message"]
    assert o["max_mamba_cache_size"] == -1  # §5: R0 = 0.01 GiB -> K = -1


def test_explicit_k_over_budget_is_the_no_memory_valueerror(qwen3_next):
    o = _rest(qwen3_next, 1.0, max_mamba_cache_size=100)
    assert o["error"]["exception"] == "ValueError"
    assert "Loaded weights leave no GPU memory" in o["error"]["message"]


def test_cap_below_page_is_not_enough_memory(qwen3_next):
    o = _rest(qwen3_next, 7.2, page_size=16, max_total_tokens=10)
    assert o["error"]["exception"] == "RuntimeError"
    assert o["error"]["message"].startswith("Not enough memory.")


def test_k_below_ratio_is_too_small_to_serve(qwen3_next):
    o = _rest(qwen3_next, 7.2, max_mamba_cache_size=4)
    assert o["error"]["exception"] == "RuntimeError"
    assert "too small to serve any requests" in o["error"]["message"]


def test_lazy_without_overlap_asserts(kimi_linear):
    o = _rest(kimi_linear, 30.0, mamba_radix_cache_strategy="extra_buffer_lazy", disable_overlap_schedule=True)
    assert o["error"]["exception"] == "AssertionError"


def test_tp_not_dividing_heads_asserts(kimi_linear):
    o = _rest(kimi_linear, 30.0, tp_size=3)
    assert o["error"] == {"exception": "AssertionError", "message": "4096 is not divisible by 3"}


@pytest.mark.parametrize(
    "partition,fragment",
    [("10,10", "sum(partitions)=20"), ("9,9,9", "len(partitions)=3"), ("x,27", "Invalid partition string")],
)
def test_bad_pp_partition(kimi_linear, partition, fragment):
    o = sglang_ref.reference_plan(
        {
            "model": {"hf_config": kimi_linear},
            "server_args": {"pp_size": 2, "page_size": 1, "mamba_radix_cache_strategy": "extra_buffer",
                            "disable_overlap_schedule": True, "mamba_full_memory_ratio": 0.9},
            "env": {"SGLANG_PP_LAYER_PARTITION": partition},
            "budget": {"rest_gib": 30.0},
        }
    )
    assert o["error"]["exception"] == "ValueError"
    assert fragment in o["error"]["message"]


def test_custom_pp_partition(kimi_linear):
    o = sglang_ref.reference_plan(
        {
            "model": {"hf_config": kimi_linear},
            "server_args": {"pp_size": 2, "page_size": 1, "mamba_radix_cache_strategy": "extra_buffer",
                            "disable_overlap_schedule": True, "mamba_full_memory_ratio": 0.9},
            "env": {"SGLANG_PP_LAYER_PARTITION": "20,7"},
            "budget": {"rest_gib": 30.0},
        }
    )
    assert o["error"] is None
    assert [(s["start_layer"], s["end_layer"]) for s in o["stages"]] == [(0, 20), (20, 27)]
    # 15 of 20 KDA layers on stage 0: P = trunc(43,417,600 * 0.75)
    assert o["stage_per_req_bytes"] == int(43_417_600 * (15 / 20))


# --------------------------------------------------------------------------- generated cases


N_CASES = 2000


@pytest.fixture(scope="module")
def generated():
    cs = cases.generate_cases(N_CASES, seed=20260523)
    return [(c, sglang_ref.reference_plan(cases.wire(c))) for c in cs]


def test_generator_is_deterministic():
    a = cases.generate_cases(50, seed=7)
    b = cases.generate_cases(50, seed=7)
    assert a == b
    assert a != cases.generate_cases(50, seed=8)


def test_generated_cases_validate_against_the_wire_schema():
    from mambasizer.schemas.request import PlanRequest

    for c in cases.generate_cases(300, seed=3):
        PlanRequest.model_validate(copy.deepcopy(cases.wire(c)))


def test_generated_cases_cover_every_branch_and_error(generated):
    errors = collections.Counter()
    families_ok = collections.Counter()
    seen = collections.Counter()
    for case, out in generated:
        sa = case["server_args"]
        e = out["error"]
        if e:
            msg = e["message"]
            if "Not enough GPU memory for hybrid" in msg:
                errors["mamba"] += 1
            elif "Loaded weights leave no GPU memory" in msg:
                errors["no_memory"] += 1
            elif msg.startswith("Not enough memory."):
                errors["not_enough_memory"] += 1
            elif "too small to serve any requests" in msg:
                errors["too_small"] += 1
            elif "is not divisible by" in msg:
                errors["tp_divisibility"] += 1
            elif "partition" in msg:
                errors["pp_partition"] += 1
            elif "Lazy extra buffer" in msg:
                errors["lazy_overlap"] += 1
            elif "Unsupported kv_cache_dtype" in msg:
                errors["kv_dtype"] += 1
            else:
                errors["other: " + e["exception"] + ": " + msg[:60]] += 1
            continue
        families_ok[case["_family"]] += 1
        pp = sa.get("pp_size", 1)
        if pp > 1:
            seen["pp"] += 1
            if any(s["kv_tokens"] is None for s in out["stages"]):
                seen["pp_sentinel"] += 1
            if len({s["kv_tokens"] for s in out["stages"]}) > 1:
                seen["pp_min_binds"] += 1
        if sa.get("attn_dp_size", 1) > 1:
            seen["attn_dp"] += 1
        if sa.get("speculative_algorithm"):
            seen["spec"] += 1
            if sa.get("enable_linear_replayssm_spec"):
                seen["replayssm"] += 1
        if sa.get("max_mamba_cache_size") is not None:
            seen["branch_explicit"] += 1
        elif sa.get("disable_radix_cache") and sa.get("max_running_requests") is not None:
            seen["branch_radix_off"] += 1
        else:
            seen["branch_auto"] += 1
        if "fp8" in sa.get("kv_cache_dtype", ""):
            seen["fp8_kv"] += 1
        if out["stages"][0]["ssm_dtype"] != "float32":
            seen["low_precision_ssm"] += 1
        if out["stages"][0]["conv_dtype"] != "bfloat16":
            seen["conv_dtype_env"] += 1
        stage_tokens = [s["kv_tokens"] for s in out["stages"] if s["kv_tokens"] is not None]
        if sa.get("max_total_tokens") is not None and out["max_total_num_tokens"] < min(stage_tokens):
            seen["user_cap_binds"] += 1
        if "free_gib_before_load" in case["budget"]:
            seen["profiler_budget"] += 1
        else:
            seen["rest_budget"] += 1
        seen[f"ratio_{out['mamba_ratio']}"] += 1
    assert not [k for k in errors if k.startswith("other")], errors
    for kind in ("mamba", "no_memory", "not_enough_memory", "too_small", "tp_divisibility",
                 "pp_partition", "lazy_overlap"):
        assert errors[kind] > 0, (kind, errors)
    assert set(families_ok) == set(cases.FAMILIES), families_ok
    assert min(families_ok.values()) >= 20, families_ok
    for feature in ("pp", "pp_sentinel", "pp_min_binds", "attn_dp", "spec", "replayssm",
                    "branch_explicit", "branch_radix_off", "branch_auto", "fp8_kv",
                    "low_precision_ssm", "conv_dtype_env", "user_cap_binds",
                    "profiler_budget", "rest_budget", "ratio_1", "ratio_3", "ratio_4", "ratio_5"):
        assert seen[feature] > 0, (feature, seen)
    # Most cases must reach a plan, or the suite compares mostly errors.
    assert sum(families_ok.values()) >= 0.6 * len(generated), (errors, families_ok)


def test_import_fakes_do_not_leak_out_of_the_oracle(qwen3_next):
    import importlib.util
    import sys

    _rest(qwen3_next, 30.0)
    for name in sglang_ref.FAKED_MODULES:
        assert name not in sys.modules or not isinstance(sys.modules[name], sglang_ref._FakeModule)
        spec = importlib.util.find_spec(name)
        assert spec is None or not isinstance(spec.loader, sglang_ref._FakeFinder)
    assert not any(isinstance(f, sglang_ref._FakeFinder) for f in sys.meta_path)


def test_warnings_are_captured_whatever_the_logging_setup(qwen3_next):
    import logging

    lg = logging.getLogger("sglang")
    old = lg.level
    lg.setLevel(logging.ERROR)  # what other suites in the same process may do
    try:
        o = plan(qwen3_next, f_post=101.30, mfs=0.897, tp_size=4)
    finally:
        lg.setLevel(old)
    assert any("capped to 457 by the mamba state cache" in w for w in o["warnings"])
    assert lg.level == old
