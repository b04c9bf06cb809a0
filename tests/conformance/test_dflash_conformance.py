"""Conformance: DFLASH and DSPARK speculative decoding against SGLang 0.5.23's own code.

Resolution: for the shipped model configs of tests/conformance/test_launch_resolution.py and
seeded flags (block sizes, draft-token counts, steps / top-k, PP, max running requests) with a
seeded draft config written to a local directory as `--speculative-draft-model-path`, SGLang's
own `ServerArgs(...).resolve_once()` + `check_server_args()` (tests/conformance/launch_ref.py:
`_handle_dflash` / `_handle_dspark` read the draft's config.json through its own `get_config`)
must resolve what ours resolves from the draft config read by `service/checkpoints` (every
resolved launch value: the draft-token count, one step, top-k 1, 48 requests, the strategy,
mem_fraction_static, the graphs), or refuse in the same words.

Sizing: seeded generated layouts (tests/conformance/cases.py) turned DFLASH / DSPARK, with a
seeded draft config; SGLang's own sizing (`sglang_ref.reference_plan`: `KVCacheConfigurator`
runs `resolve_dflash_draft_cell_size` over the draft's ModelConfig, `DefaultPoolConfigurator`
adds it to the target's cell, `_handle_max_mamba_cache` reserves the D-token intermediate)
must give our K, KV cell, tokens and request cap exactly.

    .venv/bin/python -m pytest tests/conformance/test_dflash_conformance.py -q -p no:cacheprovider -s
"""

from __future__ import annotations

import copy
import json
import random
import tempfile
from pathlib import Path

import pytest

import cases
import sglang_ref
from mambasizer.schemas.request import Env, ServerArgs
from mambasizer.service.checkpoints import _draft_geometry
from mambasizer.service.planner import plan
from mambasizer.service.solver import dflash
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.launch import resolve
from test_conformance import INPUT_ERROR_EXCEPTIONS
from tests.conformance.test_launch_resolution import MODELS, _layout, launch_fields

SEED = 20261203
N_RESOLUTION = 48
N_SIZING = 60


def draft_config(rng: random.Random, algo: str) -> dict:
    """A DFLASH / DSPARK draft's config.json (a Qwen3 dense draft, as published drafts are)."""
    heads = rng.choice([16, 32])
    cfg = {
        "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "num_hidden_layers": rng.choice([1, 2, 5, 8]),
        "hidden_size": 4096, "num_attention_heads": heads, "num_key_value_heads": rng.choice([1, 2, 4, 8, heads]),
        "head_dim": rng.choice([64, 128, 256]), "intermediate_size": 12288, "vocab_size": 151936,
        "max_position_embeddings": 262144, "torch_dtype": rng.choice(["bfloat16", "bfloat16", "float16"]),
    }
    if rng.random() < 0.6:
        cfg["dflash_config"] = {"block_size": rng.choice([4, 8, 10, 16])}
    elif rng.random() < 0.3:
        cfg["block_size"] = rng.choice([6, 12])
    if algo == "DSPARK" and rng.random() < 0.3:
        cfg["dspark_block_size"] = rng.choice([3, 5])
    return cfg


def _write_draft(cfg: dict) -> str:
    d = tempfile.mkdtemp(prefix="mambasizer-dflash-draft-")
    Path(d, "config.json").write_text(json.dumps(cfg))
    return d


def _geometry(cfg: dict) -> dflash.DraftGeometry:
    """The draft as the project reads --speculative-draft-model-path (service/checkpoints)."""
    g = _draft_geometry(cfg, cfg)
    return dflash.DraftGeometry(num_layers=cfg["num_hidden_layers"], num_kv_heads=g.get("num_kv_heads"),
                                head_dim=g.get("head_dim"), dtype=g.get("dtype"), block_size=g.get("block_size"),
                                dspark_block_size=g.get("dspark_block_size"))


def resolution_cases(n: int = N_RESOLUTION, seed: int = SEED) -> list[dict]:
    rng = random.Random(seed)
    names = [m for m in sorted(MODELS) if not m.startswith("kimi-k3")]
    out = []
    for i in range(n):
        algo = "DFLASH" if i % 2 == 0 else "DSPARK"
        sa: dict = {"speculative_algorithm": algo}
        shape = rng.choice(["plain", "plain", "block", "draft_tokens", "both_match", "both_differ", "steps", "bad_block", "pp", "mrr"])
        block_flag = "speculative_dflash_block_size" if algo == "DFLASH" else "speculative_dspark_block_size"
        if shape == "block":
            sa[block_flag] = rng.choice([2, 4, 8, 16])
        elif shape == "draft_tokens":
            sa["speculative_num_draft_tokens"] = rng.choice([1, 4, 8, 9])
        elif shape == "both_match":
            b = rng.choice([4, 8])
            sa[block_flag], sa["speculative_num_draft_tokens"] = b, b if algo == "DFLASH" else b + 1
        elif shape == "both_differ":
            sa[block_flag], sa["speculative_num_draft_tokens"] = 4, 12
        elif shape == "steps":
            sa.update(speculative_num_steps=rng.choice([1, 3]), speculative_eagle_topk=rng.choice([1, 4]))
        elif shape == "bad_block":
            sa[block_flag] = rng.choice([0, -2])
        elif shape == "pp":
            sa["pp_size"] = 2
        elif shape == "mrr":
            sa["max_running_requests"] = rng.choice([1, 16, 100])
        if rng.random() < 0.3:
            sa["mamba_radix_cache_strategy"] = rng.choice(["no_buffer", "extra_buffer", "extra_buffer_lazy"])
        name = rng.choice(names)
        if sa.get("pp_size", 1) > 1 and not _layout(name).pp_supported:
            sa.pop("pp_size")
        has_draft = rng.random() < 0.92
        out.append({"id": f"{i:03d}-{algo}-{shape}-{name}", "model": name, "server_args": sa,
                    "draft": draft_config(rng, algo) if has_draft else None})
    return out


def _ours_resolution(case: dict) -> dict:
    draft = _geometry(case["draft"]) if case["draft"] is not None else None
    try:
        launch = resolve(_layout(case["model"]), ServerArgs(**case["server_args"]), Env(), gpu_memory_mib=143771,
                         draft_layers=draft.num_layers if draft else None, needs_mfs=True, draft=draft)
    except PlanInputError as exc:
        return {"rejected": "PlanInputError", "message": str(exc)}
    if launch.rejections:
        return {"rejected": launch.rejections[0].exception, "message": launch.rejections[0].message}
    return launch_fields(launch)


def test_resolution_matches_sglang():
    from tests.conformance.launch_ref import resolve_with_sglang

    checked, refused, problems = 0, 0, []
    for case in resolution_cases():
        sa = dict(case["server_args"])
        if case["draft"] is not None:
            sa["speculative_draft_model_path"] = _write_draft(case["draft"])
        theirs = resolve_with_sglang(MODELS[case["model"]], sa, {}, 143771)
        ours = _ours_resolution(case)
        if theirs["rejected"] or ours["rejected"]:
            refused += 1
            if (ours["rejected"], ours.get("message")) != (theirs["rejected"], theirs.get("message")):
                problems.append(f"{case['id']}: ours {ours.get('rejected')}: {ours.get('message')!r} != SGLang "
                                f"{theirs['rejected']}: {theirs.get('message')!r}")
            continue
        checked += 1
        for key in sorted(set(ours) & set(theirs) - {"rejected"}):
            if ours[key] != theirs[key]:
                problems.append(f"{case['id']}: {key} ours {ours[key]!r} != SGLang {theirs[key]!r}")
    print(f"\nDFLASH/DSPARK resolution: {checked} resolved + {refused} refused cases equal SGLang 0.5.23's")
    assert not problems, "\n".join(problems[:20])
    assert checked >= N_RESOLUTION // 2 and refused >= 5


def sizing_cases(n: int = N_SIZING, seed: int = SEED) -> list[tuple[dict, dict]]:
    """(SGLang's request, ours): a generated layout turned DFLASH / DSPARK, launch values resolved."""
    rng = random.Random(seed)
    out: list[tuple[dict, dict]] = []
    for case in cases.generate_cases(4 * n, seed):
        if len(out) == n:
            break
        sa = case["server_args"]
        if sa.get("pp_size", 1) != 1 or sa.get("enable_linear_replayssm_spec") or case.get("env", {}).get("SGLANG_PP_LAYER_PARTITION"):
            continue
        algo = rng.choice(["DFLASH", "DSPARK"])
        draft = draft_config(rng, algo)
        g = _geometry(draft)
        got = dflash.resolve(algo, pp=1, draft=g, num_draft_tokens=None, max_running_requests=sa.get("max_running_requests"),
                             dflash_block_size=None, dspark_block_size=None)
        assert isinstance(got, dflash.Resolved)
        sa = {k: v for k, v in sa.items() if not k.startswith("speculative_")}
        sa.update(speculative_algorithm=algo, speculative_num_draft_tokens=got.num_draft_tokens, speculative_num_steps=1,
                  speculative_eagle_topk=1, max_running_requests=got.max_running_requests)
        theirs = copy.deepcopy(cases.wire(case))
        theirs["server_args"] = sa
        theirs["draft_model"] = {"hf_config": draft}
        ours = copy.deepcopy(theirs)
        ours["draft_model"] = {"num_layers": draft["num_hidden_layers"], **_draft_geometry(draft, draft)}
        out.append((theirs, ours))
    return out


def test_sizing_matches_sglang():
    checked, infeasible, problems = 0, 0, []
    for theirs, ours_req in sizing_cases():
        ref = sglang_ref.reference_plan(theirs)
        try:
            ours = plan(ours_req)
        except PlanInputError as exc:
            # The input errors the main conformance suite maps to SGLang's own exceptions.
            if ref["error"] is None or ref["error"]["exception"] not in INPUT_ERROR_EXCEPTIONS.get(exc.field, ()):
                problems.append(f"we refused input ({exc}); SGLang: {ref['error']}")
            infeasible += 1
            continue
        # SGLang priced the draft's own cell (no fallback to layer-count scaling).
        assert not [w for w in ref["warnings"] if "Could not resolve DFLASH draft KV" in w], ref["warnings"]
        tag = f"{theirs['server_args']['speculative_algorithm']} D={theirs['server_args']['speculative_num_draft_tokens']}"
        if ref["error"] is not None:
            infeasible += 1
            if ours.feasible or ours.error is None or ours.error.exception != ref["error"]["exception"]:
                problems.append(f"{tag}: SGLang raised {ref['error']}, ours {ours.error}")
            continue
        if not ours.feasible:
            problems.append(f"{tag}: we say it would not start ({ours.error}); SGLang sizes it")
            continue
        checked += 1
        for key in ("max_mamba_cache_size", "max_total_num_tokens", "max_running_requests"):
            if getattr(ours, key) != ref[key]:
                problems.append(f"{tag}: {key} ours {getattr(ours, key)} != SGLang {ref[key]}")
        for o, r in zip(ours.stages, ref["stages"], strict=True):
            if (o.kv_cell_bytes, o.kv_tokens) != (r["kv_cell_bytes"], r["kv_tokens"]):
                problems.append(f"{tag}: cell/tokens ours {(o.kv_cell_bytes, o.kv_tokens)} != SGLang {(r['kv_cell_bytes'], r['kv_tokens'])}")
    print(f"\nDFLASH/DSPARK sizing: {checked} sized + {infeasible} infeasible generated layouts equal SGLang 0.5.23's")
    assert not problems, "\n".join(problems[:20])
    assert checked >= N_SIZING // 2


def test_other_releases_refuse_dflash_by_name():
    draft = dflash.DraftGeometry(num_layers=5, num_kv_heads=8, head_dim=128, dtype="bfloat16", block_size=16, dspark_block_size=None)
    for algo in dflash.DFLASH_FAMILY:
        with pytest.raises(PlanInputError) as exc:
            resolve(_layout("qwen3.5-27b"), ServerArgs(speculative_algorithm=algo), Env(), gpu_memory_mib=143771,
                    draft_layers=5, needs_mfs=True, release="0.5.21", draft=draft)
        assert exc.value.field == "server_args.speculative_algorithm" and "0.5.21 is not verified" in str(exc.value)
