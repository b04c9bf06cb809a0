"""Sweeps: one plan request varied along one or two axes (`POST /v1/sweep`).

No web framework here. `run_sweep(body)` takes the decoded JSON body and returns the rows;
`rows_csv(...)` writes them as CSV. Every point is validated as the PlanRequest it makes
(pydantic, the same models `POST /v1/plan` uses); all points are validated before any is
planned, so a bad point costs no planning. Sections the axes do not touch are passed to
pydantic as the base's already-validated instances (not re-validated per point), and the
model layout is built once per distinct model: a point costs one section validation and one
pipeline run (the solver's `replan`: the same figures as `plan()`, without the remedy search
and the estimate's 2% sensitivity re-run, which only add text). Points that make the same
request (equal canonical JSON) are planned once and the answer fanned out to each row.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from mambasizer.schemas import PlanRequest
from mambasizer.schemas.plan import REFERENCE, Plan
from mambasizer.schemas.request import HFConfigModel, PresetModel
from mambasizer.schemas.sweep import (
    AXIS_MODEL_FIELDS,
    AXIS_SECTIONS,
    AXIS_TOP_FIELDS,
    MAX_AXES,
    MAX_POINTS,
    MAX_STAGES,
    SweepAxis,
)
from mambasizer.service import requests as front_door
from mambasizer.service.planner import model_layout
from mambasizer.service.presets import get_preset
from mambasizer.service.solver import PlanInputError
from mambasizer.service.solver.plan import replan
from mambasizer.service.solver.weights.quant import check_ignore_lists

HEADLINE = ("max_running_requests", "max_total_num_tokens", "max_mamba_cache_size", "pp_max_micro_batch_size", "binding_limit")
STAGE_COLUMNS = ("weights_bytes", "mamba_pool_bytes", "kv_pool_bytes", "req_to_token_bytes", "idle_bytes", "kv_tokens")
SECTIONS = ("model", "server_args", "env", "budget", "draft_model", "accounting", "sglang_version")


class SweepPointError(PlanInputError):
    """A point that is not a valid PlanRequest: the whole sweep is refused (422)."""

    def __init__(self, field: str, message: str, point: dict, errors: list[dict], allowed: list | None = None):
        super().__init__(field, message, allowed)
        self.point = point
        self.errors = errors


@dataclass(frozen=True)
class Sweep:
    axes: tuple[SweepAxis, ...]
    requests: tuple[PlanRequest, ...]
    points: tuple[dict, ...]


def _check_axes(raw_axes: Any) -> tuple[SweepAxis, ...]:
    if not isinstance(raw_axes, list) or not 1 <= len(raw_axes) <= MAX_AXES:
        raise PlanInputError("axes", f"must be a list of 1 to {MAX_AXES} axes, each {{\"field\": \"server_args.tp_size\", \"values\": [...]}}")
    axes: list[SweepAxis] = []
    for i, raw in enumerate(raw_axes):
        if not isinstance(raw, dict):
            raise PlanInputError(f"axes.{i}", 'must be an object {"field": "<dotted PlanRequest path>", "values": [...]}')
        try:
            axis = SweepAxis.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            loc = err["loc"]
            if err["type"] == "missing":
                raise PlanInputError(f"axes.{i}.{loc[0]}", "is required") from None
            if loc[:1] == ("values",) and len(loc) > 1 and isinstance(loc[1], int):
                raise PlanInputError(f"axes.{i}.values.{loc[1]}", "must be a JSON scalar: a number, a string of at most 256 characters, true, false or null") from None
            if loc[:1] == ("values",) and err["type"] == "value_error":
                raise PlanInputError(f"axes.{i}.values", str(err["ctx"]["error"])) from None
            if loc[:1] == ("values",):
                raise PlanInputError(f"axes.{i}.values", f"must be a list of 1 to {MAX_POINTS} values") from None
            if loc[:1] == ("field",):
                raise PlanInputError(f"axes.{i}.field", "must be a dotted PlanRequest path such as server_args.tp_size (at most 4 names, 128 characters)") from None
            raise PlanInputError(f"axes.{i}.{loc[0]}" if loc else f"axes.{i}", 'unknown field: an axis is {"field": ..., "values": [...]}') from None
        field = axis.field
        section = field.split(".", 1)[0]
        allowed = (section in AXIS_SECTIONS and "." in field) or field in AXIS_TOP_FIELDS or field in AXIS_MODEL_FIELDS
        if not allowed:
            raise PlanInputError(
                f"axes.{i}.field",
                f"{field!r} cannot be swept: sweep server_args.<flag>, env.<VAR>, budget.<field>, draft_model.num_layers, "
                "accounting, sglang_version, model.preset or model.allow_unverified (to compare models, sweep model.preset)",
            )
        for j, v in enumerate(axis.values):
            if isinstance(v, float) and not math.isfinite(v):
                raise PlanInputError(f"axes.{i}.values.{j}", "must be a finite number")
        if any(a.field == field for a in axes):
            raise PlanInputError(f"axes.{i}.field", f"{field!r} is already axis {next(k for k, a in enumerate(axes) if a.field == field)}; give each field once")
        axes.append(axis)
    n = math.prod(len(a.values) for a in axes)
    if n > MAX_POINTS:
        sizes = " x ".join(str(len(a.values)) for a in axes)
        raise PlanInputError("axes", f"{sizes} = {n} points; a sweep has at most {MAX_POINTS} (split it into several calls)")
    return tuple(axes)


def _base_sections(req: PlanRequest) -> dict:
    out: dict = {"model": req.model, "server_args": req.server_args, "env": req.env, "budget": req.budget, "accounting": req.accounting,
                 "sglang_version": req.sglang_version}
    if req.draft_model is not None:
        out["draft_model"] = req.draft_model
    return out


def _section_dict(value: Any) -> dict:
    if value is None:
        return {}
    return value.model_dump(exclude_unset=True)


def _blame(axes: tuple[SweepAxis, ...], index: tuple[int, ...], loc: str) -> str:
    """The sweep body path a client must fix: the axis value whose field is (or encloses, or
    sits in) the failing field, else the first axis's value at this point."""
    for a, (axis, j) in enumerate(zip(axes, index, strict=True)):
        if loc == axis.field or loc.startswith(axis.field + ".") or axis.field.startswith(loc + "."):
            return f"axes.{a}.values.{j}"
    for a, (axis, j) in enumerate(zip(axes, index, strict=True)):
        if axis.field.split(".", 1)[0] == loc.split(".", 1)[0]:
            return f"axes.{a}.values.{j}"
    return f"axes.0.values.{index[0]}"


def expand(body: dict) -> Sweep:
    """The validated PlanRequest of every point, or PlanInputError naming the sweep field."""
    extra = sorted(set(body) - {"base", "axes"})
    if extra:
        raise PlanInputError(extra[0], 'unknown field: a sweep body has "base" (a POST /v1/plan body) and "axes"')
    base = body.get("base")
    if not isinstance(base, dict):
        raise PlanInputError("base", "must be a POST /v1/plan body (a JSON object with model, budget, ...)")
    axes = _check_axes(body.get("axes"))
    try:
        prepared = front_door.prepare(base, allow_trial=False)
    except PlanInputError as exc:
        exc.field = f"base.{exc.field}" if exc.field else "base"
        if isinstance(exc, front_door.InvalidRequest):
            exc.errors = [{**e, "field": f"base.{e['field']}"} for e in exc.errors]
        raise
    sections = _base_sections(prepared.request)
    touched = sorted({a.field.split(".", 1)[0] for a in axes})
    model = prepared.request.model
    if "model" not in touched and isinstance(model, PresetModel):
        # A preset no point changes is the base's own error, not one row per point.
        try:
            get_preset(model.preset, model.allow_unverified)
        except PlanInputError as exc:
            raise PlanInputError("base.model.preset", exc.message, allowed=exc.allowed) from None
    if "model" not in touched and isinstance(model, HFConfigModel):
        # So is an ignore-list entry no point changes (a pattern SGLang refuses, a list too long).
        hf = model.hf_config
        text = hf.get("text_config")
        try:
            check_ignore_lists(hf, text if isinstance(text, dict) else None, "model.hf_config")
        except PlanInputError as exc:
            raise PlanInputError(f"base.{exc.field}", exc.message) from None
    base_dicts = {s: _section_dict(sections.get(s)) for s in touched if s not in AXIS_TOP_FIELDS}

    requests: list[PlanRequest] = []
    points: list[dict] = []
    for index in itertools.product(*(range(len(a.values)) for a in axes)):
        point = {a.field: a.values[j] for a, j in zip(axes, index, strict=True)}
        raw = dict(sections)
        patched = {s: dict(d) for s, d in base_dicts.items()}
        for field, value in point.items():
            section, _, rest = field.partition(".")
            if not rest:
                raw[section] = value
                continue
            node = patched[section]
            *parents, leaf = rest.split(".")
            for p in parents:
                child = node.get(p)
                node[p] = child = dict(child) if isinstance(child, dict) else {}
                node = child
            node[leaf] = value
        raw.update(patched)
        for top in AXIS_TOP_FIELDS:
            if raw.get(top) is None:
                raw.pop(top, None)
        try:
            requests.append(PlanRequest.model_validate(raw))
        except ValidationError as exc:
            first = front_door.validation_error(exc)
            where = _blame(axes, index, first.field)
            shown = ", ".join(f"{k}={v!r}" for k, v in point.items())
            raise SweepPointError(where, f"at the point {shown}: {first.field}: {first.message}", point, first.errors, first.allowed) from None
        points.append(point)
    _check_stages(axes, requests)
    return Sweep(axes, tuple(requests), tuple(points))


def _check_stages(axes: tuple[SweepAxis, ...], requests: list[PlanRequest]) -> None:
    """Points x stages within MAX_STAGES, before any point is planned."""
    stages = sum(r.server_args.pp_size for r in requests)
    if stages > MAX_STAGES:
        deepest = max(r.server_args.pp_size for r in requests)
        pp_axis = next((f"axes.{i}" for i, a in enumerate(axes) if a.field == "server_args.pp_size"), "axes")
        raise PlanInputError(
            pp_axis,
            f"{len(requests):,} points plan {stages:,} pipeline stages in all (pp_size up to {deepest:,}); a sweep plans "
            f"at most {MAX_STAGES:,}: fewer points, or smaller pp_size values (split it into several calls)",
        )


def _row(point: dict, result: Plan) -> dict:
    stages = []
    for st in result.stages:
        stages.append({
            "pp_rank": st.pp_rank,
            "weights_bytes": st.weights_bytes,
            "mamba_pool_bytes": st.conv_state_bytes + st.ssm_state_bytes + st.intermediate_state_bytes + st.replayssm_ring_bytes,
            "kv_pool_bytes": st.kv_pool_bytes,
            "req_to_token_bytes": st.req_to_token_bytes,
            "idle_bytes": st.idle_bytes,
            "kv_tokens": st.kv_tokens,
        })
    err = result.error
    return {
        "point": point,
        "feasible": result.feasible,
        "error_kind": err.kind if err is not None else None,
        "error_field": None,
        "error_message": err.message if err is not None else None,
        **{f: getattr(result, f) for f in HEADLINE},
        "gpu_memory_mib": result.gpu_memory_mib,
        "stages": stages,
    }


def _invalid_row(point: dict, exc: PlanInputError) -> dict:
    return {
        "point": point, "feasible": False, "error_kind": "invalid_input", "error_field": exc.field,
        "error_message": exc.message, **dict.fromkeys(HEADLINE), "gpu_memory_mib": None, "stages": [],
    }


def _canonical_keys(sweep: Sweep) -> list[tuple]:
    """One key per point, equal exactly when two points are the same PlanRequest. The sections
    no axis touches are the base's own instances in every point, so only the touched ones are
    keyed: each as pydantic serialises it (defaults filled in, so an explicit default and an
    omitted field agree), a model section once per distinct instance. Keys live only for
    this sweep."""
    touched = sorted({a.field.split(".", 1)[0] for a in sweep.axes})
    model_json: dict[int, str] = {}
    keys = []
    for req in sweep.requests:
        key = []
        for section in touched:
            value = getattr(req, section)
            if section == "model":
                text = model_json.get(id(value))
                if text is None:
                    text = model_json[id(value)] = value.model_dump_json()
                key.append(text)
            elif hasattr(value, "model_dump_json"):
                key.append(value.model_dump_json())
            else:  # a top-level scalar (accounting, sglang_version) or an unset section
                key.append(repr(value))
        keys.append(tuple(key))
    return keys


def run_sweep(body: dict) -> dict:
    """The SweepResponse for a decoded body (raises PlanInputError for a bad sweep). Each
    distinct point is planned once; a repeated point gets the same answer in its own row."""
    sweep = expand(body)
    layouts: dict[int, Any] = {}  # id(model section) -> layout; the sections live in sweep.requests
    # The row of each distinct point (not its Plan: rows are kept for the response anyway,
    # and 10,000 Plans held to the end would be garbage-collector work for nothing).
    answers: dict[tuple, dict] = {}
    rows = []
    for point, req, key in zip(sweep.points, sweep.requests, _canonical_keys(sweep), strict=True):
        row = answers.get(key)
        if row is not None:
            rows.append({**row, "point": point})  # "point" stays the first key
            continue
        try:
            layout = layouts.get(id(req.model))
            if layout is None:
                layout = layouts[id(req.model)] = model_layout(req)
            row = _row(point, replan(req, layout))
        except PlanInputError as exc:
            row = _invalid_row(point, exc)
        answers[key] = row
        rows.append(row)
    return {"reference": REFERENCE, "axes": [a.field for a in sweep.axes], "points": len(rows), "rows": rows}


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v  # a spreadsheet would run it as a formula
    return v


def rows_csv(result: dict) -> str:
    """One line per point: the axis values, the headline figures, then per-stage columns
    `pp<r>_<figure>` for as many stages as the deepest point has."""
    axes = result["axes"]
    depth = max((len(r["stages"]) for r in result["rows"]), default=0)
    header = list(axes) + ["feasible", "error_kind", "error_field", "error_message", *HEADLINE, "gpu_memory_mib"]
    header += [f"pp{r}_{c}" for r in range(depth) for c in STAGE_COLUMNS]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow(header)
    for row in result["rows"]:
        line = [row["point"][a] for a in axes]
        line += [row["feasible"], row["error_kind"], row["error_field"], row["error_message"]]
        line += [row[f] for f in HEADLINE] + [row["gpu_memory_mib"]]
        for st in row["stages"]:
            line += [st[c] for c in STAGE_COLUMNS]
        line += [None] * (len(header) - len(line))
        w.writerow([_cell(v) for v in line])
    return out.getvalue()
