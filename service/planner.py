"""plan(request) -> Plan: the one entry the API, CLI, worker, sweep and recommend size
through. It resolves the request's model to a layout (a preset name through
mambasizer.service.presets, a pasted config or explicit layout through the solver), then hands both to
the solver, which knows no preset names: mambasizer.service.solver imports nothing from
mambasizer.service.presets (tests/structure/ checks it).
"""

from __future__ import annotations

from typing import Any, Literal

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.request import PlanRequest, PresetModel
from mambasizer.schemas.vllm_plan import VllmPlan
from mambasizer.service.presets import get_preset
from mambasizer.service.solver.allocation import StageAllocationInputs, TensorSpec, stage_tensors
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.layout import ModelLayout
from mambasizer.service.solver.plan import inline_layout, parse_request, preset_layout
from mambasizer.service.solver.plan import stage_allocation_inputs as _stage_allocation_inputs
from mambasizer.service.solver.solve import solve
from mambasizer.service.solver.vllm import plan_vllm

__all__ = ["model_layout", "parse_request", "plan", "plan_engine", "plan_stage_tensors", "stage_allocation_inputs"]


def model_layout(req: PlanRequest) -> ModelLayout:
    """The layout the request's model sizes as."""
    m = req.model
    if isinstance(m, PresetModel):
        preset = get_preset(m.preset, m.allow_unverified)
        return preset_layout(preset.name, preset.hf_config)
    return inline_layout(m)


def plan(request: PlanRequest | dict | Any) -> Plan:
    """Size one SGLang deployment. Raises PlanInputError for input that cannot be sized
    (and for a request on another engine: those go through `plan_engine`); returns a Plan
    (feasible or not) for everything else. Sweeps, recommend, compare and the worker size
    through here."""
    req = parse_request(request)
    if req.engine != "sglang":
        raise PlanInputError("engine", f"this operation sizes SGLang only; engine {req.engine!r} is answered by POST /v1/plan and `mambasizer plan`", ["sglang"])
    return solve(req, model_layout(req))


def plan_engine(request: PlanRequest | dict | Any) -> Plan | VllmPlan:
    """Size one deployment on the request's engine, a row of data (`engine`, default
    "sglang"): SGLang's pipeline answers a Plan, vLLM's block pool a VllmPlan; both share
    the model layouts (presets, pasted configs, explicit layouts) and the device catalog."""
    req = parse_request(request)
    if req.engine == "vllm":
        return plan_vllm(req, model_layout(req))
    return solve(req, model_layout(req))


def stage_allocation_inputs(request: PlanRequest | dict | Any, result: Plan, device_kind: Literal["cuda", "cpu"] = "cuda") -> list[StageAllocationInputs]:
    """The per-stage allocation inputs of a plan computed for `request` (the worker's entry)."""
    req = parse_request(request)
    return _stage_allocation_inputs(req, model_layout(req), result, device_kind)


def plan_stage_tensors(request: PlanRequest | dict | Any, result: Plan, device_kind: Literal["cuda", "cpu"] = "cuda") -> list[list[TensorSpec]]:
    """One tensor manifest per PP stage of a feasible plan, for a worker on `device_kind`
    (the conv-window layout of the spec intermediates differs between CUDA and CPU).
    Raises ValueError for a plan whose sizing did not finish (K, N or T unknown)."""
    return [stage_tensors(x) for x in stage_allocation_inputs(request, result, device_kind)]
