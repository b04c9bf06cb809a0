"""Conformance: the int8 mamba checkpoint pool (`--enable-int8-mamba-checkpoint`) against
SGLang 0.5.23's own `mem_cache/mamba_checkpoint_pool.py`.

For seeded generated layouts (tests/conformance/cases.py: every family, TP, PP, SSM and
conv dtypes) and the shipped presets, SGLang's own sizing (`sglang_ref.reference_plan`)
gives K and each rank's state shapes; SGLang's own `maybe_init_int8_mamba_checkpoint_pool`
then builds the pool on the meta device (no memory) with `get_exec().mamba` answering the
flags, and its tensors' bytes must equal what our plan reports. Its free-memory check runs
with `torch.cuda.mem_get_info` stood in for, at the pool's size and one byte above: it must
refuse exactly where ours does, in the same words.

    .venv/bin/python -m pytest tests/conformance/test_int8_checkpoint_conformance.py -q -p no:cacheprovider -s
"""

from __future__ import annotations

import contextlib
import random
import types

import pytest

import cases
import sglang_ref
from mambasizer.service.planner import plan, plan_stage_tensors
from mambasizer.service.solver import int8_checkpoint
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.specs import StateSpec

SEED = 20261203
N_GENERATED = 60
PRESETS = ("qwen3-next-80b-a3b-instruct", "qwen3.5-27b", "kimi-linear-48b-a3b-instruct", "nvidia-nemotron-nano-9b-v2",
           "falcon-h1-0.5b", "granite-4.0-h-tiny", "nemotron-h-8b-base-8k")


def _sglang_pool(sg, stage: dict, K: int, ckpt_size: int | None, device: str = "meta", free_bytes: int | None = None, whole: bool = False):
    """SGLang's own pool for one rank: (its bytes, or the RuntimeError message it raised);
    `whole`: the pool object itself."""
    import sglang.srt.mem_cache.mamba_checkpoint_pool as mcp

    torch = sg.torch
    dtype = lambda name: getattr(torch, name)  # noqa: E731
    params = types.SimpleNamespace(
        shape=types.SimpleNamespace(temporal=tuple(stage["temporal_shape"]), conv=[tuple(c) for c in stage["conv_shape"]]),
        dtype=types.SimpleNamespace(temporal=dtype(stage["ssm_dtype"]), conv=dtype(stage["conv_dtype"])),
    )
    mamba = types.SimpleNamespace(enable_int8_mamba_checkpoint=True, int8_mamba_ckpt_size=ckpt_size)
    with contextlib.ExitStack() as stack:
        stack.enter_context(sglang_ref._patched(mcp, "get_exec", lambda: types.SimpleNamespace(mamba=mamba)))
        if free_bytes is not None:
            stack.enter_context(sglang_ref._patched(torch.cuda, "mem_get_info", lambda device=None: (free_bytes, free_bytes)))
        try:
            pool = mcp.maybe_init_int8_mamba_checkpoint_pool(
                mamba_size=K, cache_params=params, mamba_layer_ids=list(range(stage["mamba_layers"])), device=device,
            )
        except (RuntimeError, AssertionError) as exc:
            if "int8 mamba checkpoint pool needs" in str(exc):
                return str(exc)
            if "CUDA" in str(exc):
                return "passed"  # past the check: the allocation itself needs a GPU
            raise
        return pool if whole else pool.mem_usage_bytes()


def _requests() -> list[dict]:
    out = []
    rng = random.Random(SEED)
    for case in cases.generate_cases(N_GENERATED, SEED):
        req = cases.wire(case)
        sa = req.setdefault("server_args", {})
        if sa.get("enable_hierarchical_cache"):
            continue
        sa["enable_int8_mamba_checkpoint"] = True
        sa["int8_mamba_ckpt_size"] = rng.choice([None, None, 0, 1, 17, 3000])
        out.append(req)
    for i, name in enumerate(PRESETS):
        hf = cases.load_preset(name)
        for tp in (1, 2, 4):
            out.append({
                "model": {"hf_config": hf},
                "server_args": {"tp_size": tp, "mem_fraction_static": 0.85, "enable_int8_mamba_checkpoint": True,
                                "mamba_ssm_dtype": ("float32", "bfloat16")[(i + tp) % 2],
                                "int8_mamba_ckpt_size": (None, 500)[tp % 2]},
                "budget": {"rest_gib": 40.0 + 10 * i},
            })
    return out


def test_int8_checkpoint_pool_equals_sglangs():
    sg = sglang_ref._load()
    compared, raised = 0, 0
    problems = []
    for n, req in enumerate(_requests()):
        ref = sglang_ref.reference_plan(req)
        try:
            ours = plan(req)
        except PlanInputError:
            assert ref["error"] is not None, f"case {n}: we refused input SGLang sized"
            raised += 1
            continue
        if ref["error"] is not None or ref["max_mamba_cache_size"] is None:
            raised += 1
            continue
        assert ours.max_mamba_cache_size == ref["max_mamba_cache_size"], n
        sa = req["server_args"]
        with sglang_ref._LOCK, sglang_ref._fakes_active():
            theirs = max(_sglang_pool(sg, st, ref["max_mamba_cache_size"], sa.get("int8_mamba_ckpt_size")) for st in ref["stages"])
        entry = [c for c in ours.slack_consumers if c.name == "int8_mamba_checkpoint_pool"]
        if len(entry) != 1 or entry[0].bytes != theirs:
            problems.append(f"case {n}: ours {entry[0].bytes if entry else None} != SGLang's {theirs}")
        compared += 1
    print(f"int8 checkpoint pool: {compared} plans compared with SGLang's pool bytes, {raised} refused by both")
    assert not problems, problems[:5]
    assert compared >= 40


@pytest.mark.parametrize("name", ["qwen3-next-80b-a3b-instruct", "nvidia-nemotron-nano-9b-v2", "kimi-linear-48b-a3b-instruct"])
def test_free_memory_check_refuses_where_sglangs_does(name):
    """SGLang's pre-allocation check at the pool's exact size (refused) and one byte above
    (passed), with our message for the refusal."""
    sg = sglang_ref._load()
    req = {"model": {"hf_config": cases.load_preset(name)},
           "server_args": {"tp_size": 2, "mem_fraction_static": 0.85, "enable_int8_mamba_checkpoint": True}, "budget": {"rest_gib": 30.0}}
    ref = sglang_ref.reference_plan(req)
    st = ref["stages"][0]
    state = StateSpec(tuple(tuple(c) for c in st["conv_shape"]), tuple(st["temporal_shape"]), st["conv_dtype"], st["ssm_dtype"])
    pool = int8_checkpoint.pool_bytes(state, st["mamba_layers"], int8_checkpoint.slots(ref["max_mamba_cache_size"], None))
    for free in (pool.total - 1, pool.total, pool.total + 1):
        with sglang_ref._LOCK, sglang_ref._fakes_active():
            theirs = _sglang_pool(sg, st, ref["max_mamba_cache_size"], None, device="cuda:0", free_bytes=free)
        if int8_checkpoint.refuses(pool, free):
            assert theirs == int8_checkpoint.too_large_message(pool, free), (free, theirs)
        else:
            assert theirs == "passed", (free, theirs)


def test_the_trial_manifest_allocates_sglangs_pool_tensor_for_tensor():
    """The worker's manifest (service/solver/allocation.py) lists the tensors SGLang's pool
    allocates on each rank, in its order, with its shapes and dtypes: the int8 state, its
    scale, the conv windows, the slot free list."""
    sg = sglang_ref._load()
    compared = 0
    for n, req in enumerate(_requests()[::3]):
        ref = sglang_ref.reference_plan(req)
        try:
            ours = plan(req)
        except PlanInputError:
            continue
        if not ours.feasible or ref["error"] is not None:
            continue
        manifests = plan_stage_tensors(req, ours, "cuda")
        for rank, st in enumerate(ref["stages"]):
            with sglang_ref._LOCK, sglang_ref._fakes_active():
                pool = _sglang_pool(sg, st, ref["max_mamba_cache_size"], req["server_args"].get("int8_mamba_ckpt_size"), whole=True)
            theirs = [pool.temporal.qdata, pool.temporal.scale, *pool.conv, pool.allocator.free_slots]
            mine = [t for t in manifests[rank] if t.pool == "int8_checkpoint"]
            assert [tuple(t.shape) for t in theirs] == [t.shape for t in mine], (n, rank)
            assert [t.element_size() for t in theirs] == [t.itemsize for t in mine], (n, rank)
            assert [str(t.dtype).removeprefix("torch.") for t in theirs] == [t.dtype for t in mine], (n, rank)
            compared += 1
    print(f"int8 checkpoint manifest: {compared} ranks compared tensor for tensor with SGLang's pool")
    assert compared >= 15
