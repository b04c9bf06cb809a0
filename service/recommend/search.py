"""recommend(request): the launch settings that reach a target, searched with the exact solver.

A client of the solver: it builds PlanRequests and reads Plans (`mambasizer.service.solver.plan.replan`,
the pipeline without remedies). For every parallel layout and dtype choice in the grid:

1. the pipeline partition: the default one, plus every partition `partition.pareto_partitions`
   returns that the default does not dominate (exact: see partition.py);
2. the mamba/KV split: SGLang's default, plus `--max-mamba-cache-size` at the least value that
   serves `running_requests` (every other byte to KV), or at the balance where neither the
   mamba slots nor the KV tokens (per `tokens_per_request`) are idle (bisection: the slots grow
   and the KV-side limits shrink with the cache size, so the crossing is found exactly).
   `--mamba-full-memory-ratio` is never emitted: in SGLang 0.5.23's `_handle_max_mamba_cache`
   a ratio only chooses the slot count K of its automatic branch, and everything after (the
   speculative intermediate rows, the (K + 1) state rows charged, the KV tokens, the requests)
   reads K and the rest through the same expressions as the explicit branch, where
   K = max_mamba_cache_size // attn_dp. Every ratio's plan is therefore the plan of the cache
   size K x attn_dp, which the search can set to any K (tests/recommend/test_mamba_ratio.py);
3. `--mem-fraction-static`, when asked, up to the largest value that keeps SGLang's pre-capture
   activation reserve (`pre_capture_activation_reserve_mb`, the floor its post-capture sizing
   keeps) out of the pre-load free memory.

The best setting per grid point is ranked by the objective; every returned setting is then
re-planned from its own launch flags through the request front door POST /v1/plan uses (service/requests.prepare + plan()).

Several GPU kinds (`"gpu": ["h200", "b200", "mi300x"]`, kinds.py): one search per kind, each
planned from its GPU alone exactly as a single-GPU request, walked grid point by grid point
across the kinds so that the shared bounds (MAX_GRID settings over all kinds, MAX_PLANS plans,
one partition-enumeration allowance) cut every kind alike. The candidates are the best setting
of each (kind, grid point), ranked together: `fewest_gpus` and `cheapest` then compare kinds.
Ties, after each objective's own order: the lower cost (when priced) right after the GPU count,
and last the kind listed first in the request.
"""

from __future__ import annotations

import math
from collections import Counter
from itertools import product
from typing import Any, NamedTuple

from pydantic import ValidationError

from mambasizer.schemas.plan import Plan
from mambasizer.schemas.recommend import (
    Candidate,
    RecommendRequest,
    RecommendResponse,
    TargetCheck,
)
from mambasizer.schemas.request import (
    MAX_PARALLEL,
    Budget,
    PlanRequest,
    ServerArgs,
)
from mambasizer.service.planner import model_layout
from mambasizer.service.recommend import layers, partition
from mambasizer.service.recommend.flags import launch_flags
from mambasizer.service.recommend.kinds import (
    Kind,
    check_shape,
    compares_kinds,
    cost_per_hour,
    kinds_of,
)
from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.launch import _capacity_defaults
from mambasizer.service.solver.monotone import smallest_int
from mambasizer.service.solver.plan import input_error_from_validation, replan
from mambasizer.service.solver.releases.sizing import release_label
from mambasizer.service.solver.requests import ESTIMATE_MAX, ESTIMATE_MIN
from mambasizer.service.solver.stages import pp_stages

GIB = 1 << 30
MAX_GRID = 512  # grid points (layouts x dtypes x algorithms) one search plans: a few seconds at most
MAX_PARETO = 32
# Plans one search may run (a few seconds on 2 cores): the grid, the partitions and the cache
# size bisections together. Past it the search stops and says so.
MAX_PLANS = 5_000


class _PlanBudgetSpent(Exception):
    pass
# SGLang's `pre_capture_activation_reserve_mb` (runtime_context.py / overrides.py): what the
# post-capture KV sizing keeps free for activations whatever mem_fraction_static says.
RESERVE_BASE_MB, RESERVE_PER_TOKEN_MB, RESERVE_FLOOR_MB = 512, 1.5, 10 * 1024


class PlanSummary(NamedTuple):
    """What ranking, the Pareto front and the re-plan check read of a kept plan. A search keeps
    these once its grid point is done, not whole plans: a 90-stage Plan holds ~90 stage
    records, and thousands of them (730 MiB for one request) took the API down."""

    max_running_requests: int | None
    max_total_num_tokens: int | None
    max_mamba_cache_size: int | None
    binding_limit: str | None
    resolved: Any  # mambasizer.schemas.plan.Resolved (shared with the Plan, not copied)

    @classmethod
    def of(cls, p: Plan) -> PlanSummary:
        return cls(p.max_running_requests, p.max_total_num_tokens, p.max_mamba_cache_size, p.binding_limit, p.resolved)


class Setting(NamedTuple):
    """One evaluated setting: the server_args, the partition env value, and its plan (whole
    while its grid point is searched, a PlanSummary after)."""

    args: ServerArgs
    partition: str | None
    plan: Any  # Plan | PlanSummary
    grid: int  # index of its grid point
    raised_mfs: bool
    kind: int = 0  # index of its GPU kind (kinds.kinds_of order)
    cost: float | None = None  # one replica per hour, when its kind is priced


# ----------------------------------------------------------------------------- request


def parse(raw: RecommendRequest | dict | Any) -> RecommendRequest:
    if isinstance(raw, RecommendRequest):
        return raw
    if not isinstance(raw, dict):
        raise PlanInputError("request", "must be a JSON object (a RecommendRequest)")
    raw = dict(raw)
    if ("gpu" in raw and raw["gpu"] is not None) == ("budget" in raw and raw["budget"] is not None):
        raise PlanInputError("gpu", 'give exactly one of gpu (a GET /v1/gpus name, e.g. "h200": planned from the GPU alone) or budget (a PlanRequest budget)')
    check_shape(raw.get("gpu"))
    if raw.get("sglang_args") is not None:
        raw = _with_sglang_args(raw)
    try:
        req = RecommendRequest.model_validate(raw)
    except ValidationError as exc:
        err = input_error_from_validation(exc)
        if err.message.startswith("unknown field"):
            err = PlanInputError(err.field, "unknown field (not part of the RecommendRequest contract)", err.allowed)
        raise err from None
    kinds_of(req)  # every GPU in the catalog with a confirmed capacity, every price for a requested one
    return req


def _with_sglang_args(raw: dict) -> dict:
    """`sglang_args` read into `server_args` and `env` by the front door, as POST /v1/plan reads them."""
    from mambasizer.service.requests.launch_line import take_sglang_args

    raw, _ = take_sglang_args(raw, raw.pop("sglang_args"))
    return raw


# Search knob -> the ServerArgs field it varies.
_KNOBS = {
    "tp_size": "tp_size", "pp_size": "pp_size", "attn_dp_size": "attn_dp_size", "ep_size": "ep_size",
    "kv_cache_dtype": "kv_cache_dtype", "mamba_ssm_dtype": "mamba_ssm_dtype", "speculative": "speculative_algorithm",
}
_DEFAULT_TP = (1, 2, 4, 8)


def _grid(req: RecommendRequest, kinds: int = 1) -> list[dict]:
    """Every grid point: the ServerArgs updates of one (tp, pp, dp, ep, kv, ssm, spec) choice.
    A point whose ep_size does not divide its tp_size stays in: the search counts it refused.
    Each of `kinds` GPU kinds searches every point: MAX_GRID bounds the points x the kinds."""
    fixed = req.server_args.model_fields_set
    values: dict[str, list] = {}
    for knob, field in _KNOBS.items():
        searched = getattr(req.search, knob)
        if searched is not None and field in fixed:
            raise PlanInputError(f"search.{knob}", f"server_args fixes {field}={getattr(req.server_args, field)!r}; search it or fix it, not both")
        values[field] = list(dict.fromkeys(searched)) if searched is not None else [getattr(req.server_args, field)]
    gpus = set(req.gpus) if req.gpus is not None else None
    # GPU counts given but no sizes to reach them: the usual TP sizes, and PP to fill the count.
    if gpus is not None and req.search.tp_size is None and "tp_size" not in fixed:
        values["tp_size"] = [t for t in _DEFAULT_TP if any(g % t == 0 for g in gpus)] or [1]
    if gpus is not None and req.search.pp_size is None and "pp_size" not in fixed:
        # A derived pp_size obeys the bound of a given one (ServerArgs: 1..MAX_PARALLEL);
        # past it there is no setting to plan, so it never reaches the grid.
        derived = {g // t for g in gpus for t in values["tp_size"] if g % t == 0}
        values["pp_size"] = sorted(p for p in derived if 1 <= p <= MAX_PARALLEL)
        if derived and not values["pp_size"]:
            raise PlanInputError(
                "gpus", f"these GPU counts need pp_size {min(derived):,} or more at tp_size {max(values['tp_size'])} or less; "
                f"pp_size is at most {MAX_PARALLEL}: give fewer GPUs per replica, or search.tp_size",
            )
    raw = math.prod(len(values[f]) for f in _KNOBS.values())
    if raw > MAX_GRID * 8:
        raise PlanInputError("search", f"{raw:,} combinations of the searched knobs; at most {MAX_GRID * 8:,} before the GPU-count filter: narrow a knob")
    out = []
    for tp, pp, dp, ep, kv, ssm, spec in product(*(values[f] for f in _KNOBS.values())):
        if gpus is not None and tp * pp not in gpus:
            continue
        if tp % dp:
            continue  # attention DP must divide TP (SGLang asserts it): not a setting
        out.append({"tp_size": tp, "pp_size": pp, "attn_dp_size": dp, "ep_size": ep, "kv_cache_dtype": kv, "mamba_ssm_dtype": ssm, "speculative_algorithm": spec})
    if not out:
        raise PlanInputError("gpus", "no searched tp_size x pp_size gives one of these GPU counts (attention DP must divide tp_size)")
    if len(out) > MAX_GRID:
        raise PlanInputError("search", f"{len(out)} settings to search; at most {MAX_GRID}: narrow a knob")
    if len(out) * kinds > MAX_GRID:
        raise PlanInputError(
            "search", f"{len(out)} settings on each of {kinds} GPU kinds: {len(out) * kinds:,} to search; at most {MAX_GRID} "
            "over all kinds: narrow a knob, or compare fewer GPUs",
        )
    return out


# ----------------------------------------------------------------------------- figures


def _known(v: int | None) -> int:
    """A figure of a plan that started (SGLang computed it)."""
    assert v is not None, "a started plan has every headline figure"
    return v


def _totals(p: Plan) -> tuple[int, int]:
    dp = p.resolved.attn_dp_size
    return _known(p.max_running_requests) * dp, _known(p.max_total_num_tokens) * dp


def target_checks(req: RecommendRequest, p: Plan) -> dict[str, TargetCheck]:
    t = req.target
    n, tokens = _totals(p)
    out = {}

    def check(name: str, required: int, achieved: int) -> None:
        out[name] = TargetCheck.trusted({"required": required, "achieved": achieved, "margin": achieved - required, "met": achieved >= required})

    if t.running_requests is not None:
        check("running_requests", t.running_requests, n)
    if t.context_length is not None:
        # One full request must fit in one worker's pool, at a context the server serves:
        # the tokens when it does, the served context when that is shorter.
        served = p.resolved.context_length
        check("context_length", t.context_length, _known(p.max_total_num_tokens) if served >= t.context_length else served)
    if t.tokens_per_request is not None:
        check("tokens_per_request", t.tokens_per_request * (t.running_requests or 1), tokens)
    return out


def _meets(req: RecommendRequest, p: Plan) -> bool:
    return all(c.met for c in target_checks(req, p).values())


def _rank_key(req: RecommendRequest, s: Setting) -> tuple:
    """Larger is better."""
    n, tokens = _totals(s.plan)
    gpus = s.plan.resolved.tp_size * s.plan.resolved.pp_size
    checks = target_checks(req, s.plan).values()
    meets = all(c.met for c in checks)
    # Settings that miss a target rank by how close they come (the worst achieved/required).
    close = 1.0 if meets else min(c.achieved / c.required for c in checks)
    simple = -len(launch_flags(s.args)) - (s.partition is not None)
    # Across GPU kinds: the lower cost right after the GPU count (on one kind it follows the
    # count, so it never decides there), and last the kind listed first (a full tie).
    cheap = -s.cost if s.cost is not None else 0.0
    if req.objective == "fewest_gpus":
        # Fewest GPUs, then the default mem_fraction_static, then the most KV tokens (with
        # running_requests met, the least mamba memory that meets it leaves KV the most).
        return (meets, close, -gpus, cheap, not s.raised_mfs, tokens, n, simple, -s.kind)
    if req.objective == "cheapest":
        return (meets, close, cheap, -gpus, not s.raised_mfs, tokens, n, simple, -s.kind)
    if req.objective == "most_requests":
        return (meets, close, _requests_served(req, s.plan), n, tokens, -gpus, cheap, not s.raised_mfs, simple, -s.kind)
    return (meets, close, tokens, n, -gpus, cheap, not s.raised_mfs, simple, -s.kind)


# ----------------------------------------------------------------------------- the search


class _Shared:
    """What every GPU kind's search of one request draws on: the plans run, the partition
    enumeration allowance (see _pareto_partitions)."""

    def __init__(self) -> None:
        self.plans = 0
        self.partition_steps = [SEARCH_PARTITION_STEPS]


class _Search:
    def __init__(self, req: RecommendRequest, trace: list | None = None, kind: Kind | None = None, index: int = 0,
                 shared: _Shared | None = None):
        self.req = req
        self.trace = trace  # bench/run.py: the PlanRequests searched, to loop plan() over them
        self.kind = kind if kind is not None else kinds_of(req)[0]
        self.index = index
        self.shared = shared if shared is not None else _Shared()
        budget = Budget(gpu=self.kind.spelling) if req.gpu is not None else req.budget
        assert budget is not None  # RecommendRequest requires exactly one of them
        base_args = req.server_args
        if req.target.context_length is not None and "context_length" not in base_args.model_fields_set:
            base_args = base_args.model_copy(update={"context_length": req.target.context_length})
        self.base = PlanRequest(model=req.model, server_args=base_args, env=req.env, budget=budget, draft_model=req.draft_model,
                                sglang_version=req.sglang_version)
        self.layout = model_layout(self.base)
        # The base request itself must plan: a model or budget the solver cannot size is the
        # request's error (422), while a searched setting it rejects is counted under refused.
        replan(self.base, self.layout)
        self.searched = 0
        self.refused: Counter = Counter()
        self.settings: list[Setting] = []
        self.warnings: list[str] = []
        self.partition_steps = self.shared.partition_steps

    # One plan of the pipeline. None when the input itself is refused.
    def run(self, args: ServerArgs, part: str | None) -> Plan | None:
        if self.shared.plans >= MAX_PLANS:
            raise _PlanBudgetSpent
        self.shared.plans += 1
        self.searched += 1
        env = self.base.env if part is None else self.base.env.model_copy(update={"SGLANG_PP_LAYER_PARTITION": part})
        req = self.base.model_copy(update={"server_args": args, "env": env})
        if self.trace is not None:
            self.trace.append(req)
        try:
            p = replan(req, self.layout)
        except PlanInputError as exc:
            self.refused[f"invalid {exc.field}"] += 1
            return None
        if not p.feasible:
            assert p.error is not None
            self.refused[p.error.kind] += 1
        return p

    def keep(self, args: ServerArgs, part: str | None, p: Plan | None, grid: int, raised: bool) -> None:
        if p is not None and p.feasible:
            cost = cost_per_hour(p.resolved.tp_size * p.resolved.pp_size, self.kind)
            self.settings.append(Setting(args, part, p, grid, raised, self.index, cost))

    def grid_point(self, i: int, upd: dict) -> None:
        start = len(self.settings)
        try:
            self._grid_point(i, upd)
        finally:
            # The partition bounds read whole plans of this point only; keep summaries after.
            self.settings[start:] = [s._replace(plan=PlanSummary.of(s.plan)) for s in self.settings[start:]]

    def _grid_point(self, i: int, upd: dict) -> None:
        args = self.base.server_args.model_copy(update=upd)
        if args.tp_size % args.ep_size:
            # SGLang builds its MoE groups as ep_size x (tp_size // ep_size) ranks of the TP
            # group: not a launch. The solver checks it only where it computes weights (the
            # GPU-only budget), so the search refuses it here for every budget.
            self.refused["invalid server_args.ep_size"] += 1
            return
        base_plan = self.run(args, None)
        if base_plan is None:
            return
        mfs_values: list[float | None] = [None]
        ceiling = self._mfs_ceiling(args, base_plan)
        if ceiling is not None:
            mfs_values.append(ceiling)
        for mfs in mfs_values:
            a = args if mfs is None else args.model_copy(update={"mem_fraction_static": mfs})
            p0 = base_plan if mfs is None else self.run(a, None)
            if p0 is None:
                continue
            self.partition_point(i, a, p0, raised=mfs is not None)

    def partition_point(self, i: int, args: ServerArgs, p0: Plan, raised: bool) -> None:
        start = len(self.settings)
        self.mamba_point(i, args, None, p0, raised)
        if args.pp_size == 1 or not self.req.search.pp_partition or self.base.env.SGLANG_PP_LAYER_PARTITION is not None:
            return
        costs = self._costs(args)
        if costs is None:
            return
        default = tuple(s.end - s.start for s in pp_stages(self.layout.num_hidden_layers, args.pp_size))
        t0 = partition.triple_of(costs, default)
        tried = {default}
        for parts in self._pareto(costs, args):
            if parts == default:
                continue
            t = partition.triple_of(costs, parts)
            if t.weights >= t0.weights and t.mamba >= t0.mamba and t.full >= t0.full:
                continue  # the default partition is at least as good in every figure (monotonicity)
            tried.add(parts)
            text = ",".join(map(str, parts))
            self.mamba_point(i, args, text, self.run(args, text), raised)
        if _ratio_split(args):
            self._remainder_partitions(i, args, p0, costs, t0.weights, start, tried, raised)

    def _remainder_partitions(self, i: int, args: ServerArgs, p0: Plan, costs: partition.LayerCosts, w0: int,
                              start: int, tried: set[tuple[int, ...]], raised: bool) -> None:
        """SGLang's default ratio split keeps K = floor(B / P) - 1 slots of P bytes out of the
        mamba budget B = R x r / (1 + r): the KV gets R - floor(B / P) x P, which lies in
        [R / (1 + r), R / (1 + r) + P). Not monotone in the triple: a larger stage (more mamba
        layers: a larger P; more weights: a smaller R) can leave up to P bytes more KV. The
        Pareto partitions above are the monotone part; here every other triple is bounded from
        above with the real pipeline's own figures and planned unless a setting already
        planned at this point is at least as good in both tokens and requests:

          R(W)   <= R(W0) + (W0 - W) + eps   (F_post = probe(free - W): linear in the largest
                                              stage's weights up to the float32 probe's 2^-24)
          KV     <  R(W) / (1 + r) + P(M)    (floor(B / P) > B / P - 1)
          tokens <= KV / cell(F)             (the MIN across stages is at most the stage with F
                                              full layers; cell(F) >= any planned stage's cell
                                              with at most F full layers)
          reqs   <= min(tokens // 2, (floor(B / P(M)) - 1) // ratio, the estimate or the cap)

        Any partition that could beat the answer on tokens or requests survives the bound, so
        the answer is the exact optimum over contiguous partitions (tests/recommend/
        test_partition.py checks it against plan() on every partition)."""
        refs = [(p0, w0)] + [(s.plan, partition.triple_of(costs, tuple(map(int, s.partition.split(",")))).weights)
                             for s in self.settings[start:] if s.partition is not None]
        ref = next(((q, w) for q, w in refs if q.rest_gib is not None), None)
        if ref is None:
            return  # no partition reached the split: nothing to bound the others with
        p_ref, w_ref = ref
        n_mamba = sum(costs.mamba)
        if n_mamba == 0:
            return  # no mamba pool: nothing rounds
        r = p_ref.resolved.mamba_full_memory_ratio
        ratio = p_ref.mamba_ratio
        full = p_ref.mamba_cache_per_req_bytes
        planned = [s.plan for s in self.settings[start:]]
        # Every rank charges the largest stage's share of the slot (or, under whole-model
        # accounting, all of it): the share is a lower bound either way, an upper one only
        # once the planned settings show the share is what they were charged.
        shares = [st.stage_per_req_bytes == int(full * (max(x.mamba_layers for x in q.stages) / n_mamba))
                  for q in planned for st in q.stages[:1]]
        scaled = bool(shares) and all(shares)

        def slot_low(m: int) -> int:
            return int(full * (m / n_mamba))

        def per_slot(m: int) -> int:
            return slot_low(m) if scaled else full

        cells: dict[int, int] = {}
        for q in planned:
            for st in q.stages:
                cells[st.full_attention_layers] = st.kv_cell_bytes
        levels = sorted(cells.items())
        eps = int((p_ref.free_gib_before_load or 0.0) * GIB * 2.0 ** -22) + 4096
        assert p_ref.rest_gib is not None
        r_ref = p_ref.rest_gib * GIB + eps
        ctx = p_ref.resolved.context_length
        dp = args.attn_dp_size
        mrr = args.max_running_requests
        ratio_plans = [(_known(q.max_total_num_tokens), _known(q.max_running_requests), s.args.max_mamba_cache_size is None)
                       for s, q in zip(self.settings[start:], planned, strict=True)]

        def bound(W: int, m_low: int, m_high: int, F: int) -> tuple[float, float]:
            rest = r_ref + (w_ref - W)
            if rest <= 0:
                return -1, -1
            kv = rest / (1 + r) + per_slot(m_high) + 4096
            cell = max((c for f, c in levels if f <= F), default=0)
            t = math.floor(kv / cell) if cell > 0 else math.inf
            n = t // 2
            if ratio is not None and slot_low(m_low) > 0:
                n = min(n, math.floor(rest * r / (1 + r) / slot_low(m_low)) // ratio)
            if mrr is not None:
                n = min(n, max(1, mrr // dp))
            elif t != math.inf:
                n = min(n, max(min(int(t / ctx * 512), ESTIMATE_MAX), ESTIMATE_MIN))
            return t, n

        def keep(W: int, m_low: int, m_high: int, F: int) -> bool:
            t, n = bound(W, m_low, m_high, F)
            if t < 0:
                return False
            return not any(tb >= t and nb >= n and (plain or tb > t or nb > n) for tb, nb, plain in ratio_plans)

        try:
            found = _triples_within(costs, args.pp_size, keep, self.partition_steps)
        except partition.PartitionSearchTooLarge as exc:
            self._not_proven()
            found = {partition.triple_of(costs, p): p for p in exc.found}
        for t, parts in sorted(found.items(), key=lambda kv: bound(kv[0].weights, kv[0].mamba, kv[0].mamba, kv[0].full), reverse=True):
            if parts in tried or not keep(t.weights, t.mamba, t.mamba, t.full):
                continue  # the plans since have settled it
            tried.add(parts)
            text = ",".join(map(str, parts))
            before = len(self.settings)
            self.mamba_point(i, args, text, self.run(args, text), raised)
            ratio_plans += [(_known(s.plan.max_total_num_tokens), _known(s.plan.max_running_requests), s.args.max_mamba_cache_size is None)
                            for s in self.settings[before:]]

    def _costs(self, args: ServerArgs) -> partition.LayerCosts | None:
        if not self.base.budget.estimated:
            return layers.counts_only(self.layout)
        spec = args.speculative_algorithm
        draft = self.req.draft_model.num_layers if self.req.draft_model is not None else None
        load_nextn = spec in ("EAGLE", "NEXTN") and draft is None and self.layout.num_nextn_predict_layers > 0
        try:
            costs = layers.layer_costs(self.layout, tp_size=args.tp_size, pp_size=args.pp_size, ep_size=args.ep_size, load_nextn=load_nextn, draft_num_layers=draft)
        except PlanInputError:
            return None  # the plan of this point already reported why (refused)
        note = "mambasizer: this model's weights do not split into per-layer bytes; SGLang's default layer partition is kept"
        if costs is None and note not in self.warnings:
            self.warnings.append(note)
        return costs

    def _pareto(self, costs: partition.LayerCosts, args: ServerArgs) -> tuple[tuple[int, ...], ...]:
        try:
            return _pareto_partitions(costs, args.pp_size, self.partition_steps)
        except partition.PartitionSearchTooLarge as exc:
            self._not_proven()
            return tuple(exc.found)

    def _not_proven(self) -> None:
        note = ("mambasizer: the layer partition search passed its work bound for this layout; the partitions it had "
                "found are still tried, but the partition is not proven optimal")
        if note not in self.warnings:
            self.warnings.append(note)

    def _mfs_ceiling(self, args: ServerArgs, p: Plan) -> float | None:
        """The largest mem_fraction_static whose slack F_pre x (1 - mfs) still holds SGLang's
        pre-capture activation reserve, when above the automatic value."""
        if not self.req.search.mem_fraction_static or "mem_fraction_static" in self.req.server_args.model_fields_set:
            return None
        if p.free_gib_before_load is None or p.gpu_memory_mib is None or p.resolved.mem_fraction_static is None or self.layout.is_multimodal:
            note = ("mambasizer: --mem-fraction-static was not searched: "
                    + ("SGLang adjusts it for the vision tower of a multimodal model, which the ceiling does not model"
                       if self.layout.is_multimodal else "the budget gives no GPU capacity and pre-load free memory to bound it"))
            if note not in self.warnings:
                self.warnings.append(note)
            return None
        gpu = p.gpu_memory_mib
        chunked = args.chunked_prefill_size if args.chunked_prefill_size is not None else _capacity_defaults(gpu, args.tp_size)[0]
        tokens = max(chunked, 2048) if chunked > 0 else max(args.max_prefill_tokens, 2048)
        reserve = RESERVE_BASE_MB + tokens * RESERVE_PER_TOKEN_MB + args.tp_size * args.pp_size / 8 * 1024
        if gpu > 60 * 1024:
            reserve = max(reserve, RESERVE_FLOOR_MB)
        ceiling = math.floor((1 - reserve / 1024 / p.free_gib_before_load) * 1000) / 1000
        return ceiling if ceiling > p.resolved.mem_fraction_static else None

    def mamba_point(self, i: int, args: ServerArgs, part: str | None, p0: Plan | None, raised: bool) -> None:
        if p0 is None:
            return
        self.keep(args, part, p0, i, raised)
        fixed = self.req.server_args.model_fields_set
        if not self.req.search.mamba_cache or fixed & {"max_mamba_cache_size", "mamba_full_memory_ratio"} or p0.mamba_ratio is None:
            return
        if p0.error is not None and p0.error.kind == "weights_do_not_fit":
            return  # decided before the split: no cache size changes it
        t, dp, ratio = self.req.target, args.attn_dp_size, p0.mamba_ratio
        if t.running_requests is not None:
            per_worker = -(-t.running_requests // dp)
            upd: dict = {"max_mamba_cache_size": per_worker * ratio * dp}
            # Above SGLang's estimate floor (or under speculative decoding's default of 48) the
            # requests cap needs the flag too; a fixed one stays.
            if "max_running_requests" not in fixed and (per_worker > ESTIMATE_MIN or p0.resolved.speculative_algorithm is not None):
                upd["max_running_requests"] = per_worker * dp
            a = args.model_copy(update=upd)
            self.keep(a, part, self.run(a, part), i, raised)
        if self.req.objective == "most_requests" or (t.tokens_per_request is not None and t.running_requests is None):
            self.balance(i, args, part, p0, raised)

    def balance(self, i: int, args: ServerArgs, part: str | None, p0: Plan, raised: bool) -> None:
        """The cache size where the mamba slots stop binding: below it the slots limit the
        requests, above it the KV side does (tokens // 2, SGLang's estimate, tokens_per_request).
        The predicate is monotone in the size, so bisection finds the first size where the slots
        no longer bind; the best is there or one request's worth of slots below."""
        dp, ratio, tpr = args.attn_dp_size, _known(p0.mamba_ratio), self.req.target.tokens_per_request
        cache: dict[int, Plan | None] = {}

        def at(k: int) -> Plan | None:
            if k not in cache:
                cache[k] = self.run(args.model_copy(update={"max_mamba_cache_size": k * dp}), part)
            return cache[k]

        def slots_free(k: int) -> bool:
            p = at(k)
            if p is None or not p.feasible:
                return True  # past the memory: the KV side (nothing left) is what limits
            if p.binding_limit != "mamba_slots":
                return True  # the slots reach what the KV side (or SGLang's caps) allows
            return tpr is not None and _known(p.max_total_num_tokens) // tpr <= k // ratio

        lo = ratio
        hi = max(lo, (p0.max_mamba_cache_size or lo))
        while not slots_free(hi) and hi < 1 << 40:
            lo, hi = hi, hi * 2
        first = smallest_int(lo, hi, slots_free)
        lo = hi if first is None else first  # None: the doubling stopped at its bound
        for k in {lo, max(ratio, lo - ratio)}:
            p = at(k)
            if p is not None:
                self.keep(args.model_copy(update={"max_mamba_cache_size": k * dp}), part, p, i, raised)


# Model structure, not an answer: the Pareto partitions of a (layer costs, pp) pair, shared by
# every search (bounded; each entry is a few partitions of at most 4096 layers).
_PARETO: dict[tuple[partition.LayerCosts, int], tuple[tuple[int, ...], ...]] = {}
_PARETO_ENTRIES = 256
# The partition enumerations one search may run (cache hits are free): a request listing many
# PP x TP sizes of a huge layout cannot buy more than this, in greedy layer-steps.
SEARCH_PARTITION_STEPS = 3 * partition.MAX_STEPS


def _pareto_partitions(costs: partition.LayerCosts, pp: int, budget: list[int]) -> tuple[tuple[int, ...], ...]:
    """`budget` is the search's one-element step allowance, charged with the work done.
    Raises PartitionSearchTooLarge (with what was found) when the allowance runs out."""
    key = (costs, pp)
    got = _PARETO.get(key)
    if got is not None:
        return got
    if budget[0] <= 0:
        raise partition.PartitionSearchTooLarge([])
    steps: list[int] = []
    try:
        got = tuple(partition.pareto_partitions(costs, pp, max_steps=min(partition.MAX_STEPS, budget[0]), steps=steps))
    finally:
        budget[0] -= sum(steps)
    if len(_PARETO) >= _PARETO_ENTRIES:
        _PARETO.pop(next(iter(_PARETO)))
    _PARETO[key] = got
    return got


def _ratio_split(args: ServerArgs) -> bool:
    """SGLang sizes the mamba pool by --mamba-full-memory-ratio (its automatic branch)."""
    return (args.max_mamba_cache_size is None and not (args.disable_radix_cache and args.max_running_requests is not None)
            and args.speculative_algorithm is None)


def _triples_within(costs: partition.LayerCosts, pp: int, keep, budget: list[int]) -> dict:
    """partition.triples_within charged to the search's step allowance (see _pareto_partitions)."""
    if budget[0] <= 0:
        raise partition.PartitionSearchTooLarge([])
    steps: list[int] = []
    try:
        return partition.triples_within(costs, pp, keep, max_steps=min(partition.MAX_STEPS, budget[0]), steps=steps)
    finally:
        budget[0] -= sum(steps)


def _requests_served(req: RecommendRequest, p: Plan) -> int:
    n, tokens = _totals(p)
    tpr = req.target.tokens_per_request
    return min(n, tokens // tpr) if tpr else n


# ----------------------------------------------------------------------------- answer


def recommend(raw: RecommendRequest | dict | Any, trace: list | None = None) -> RecommendResponse:
    """The answer to a RecommendRequest. `trace`, when given, receives every PlanRequest the
    search planned (the benchmark loops plan() over them)."""
    req = parse(raw)
    kinds = kinds_of(req)
    grid = _grid(req, len(kinds))
    shared = _Shared()
    searches = [_Search(req, trace, kind, i, shared) for i, kind in enumerate(kinds)]
    done = 0
    try:
        # Point by point across the kinds: a bound reached cuts every kind at the same point.
        for i, upd in enumerate(grid):
            for search in searches:
                search.grid_point(i, upd)
                done += 1
    except _PlanBudgetSpent:
        searches[0].warnings.append(
            f"mambasizer: the search stopped at its bound of {MAX_PLANS:,} plans after {done} of {len(grid) * len(kinds)} settings "
            "(the rest were not searched): narrow the searched knobs or the GPU counts"
            + (", or compare fewer GPUs" if len(kinds) > 1 else "")
        )
    return _answer(req, kinds, _Searched.of(searches))


class _Searched(NamedTuple):
    """Every kind's search together: what the answer reads."""

    searched: int
    refused: Counter
    settings: list[Setting]
    warnings: list[str]

    @classmethod
    def of(cls, searches: list[_Search]) -> _Searched:
        refused: Counter = Counter()
        for s in searches:
            refused.update(s.refused)
        # the same note from several kinds once
        warnings = list(dict.fromkeys(w for s in searches for w in s.warnings))
        return cls(sum(s.searched for s in searches), refused, [x for s in searches for x in s.settings], warnings)


def _pick(req: RecommendRequest, settings: list[Setting]) -> list[Setting]:
    """The best setting of each grid point, best first."""
    best: dict[tuple[int, int], Setting] = {}
    for s in settings:
        b = best.get((s.kind, s.grid))
        if b is None or _rank_key(req, s) > _rank_key(req, b):
            best[s.kind, s.grid] = s
    return sorted(best.values(), key=lambda s: _rank_key(req, s), reverse=True)


def _front(req: RecommendRequest, settings: list[Setting]) -> list[Setting]:
    """Pareto front over (fewest GPUs, lowest cost when priced, most requests, most tokens),
    across the kinds: one setting per point."""
    by_point: dict[tuple, Setting] = {}
    for s in settings:
        n, tokens = _totals(s.plan)
        point = (s.plan.resolved.tp_size * s.plan.resolved.pp_size, s.cost if s.cost is not None else 0.0, n, tokens)
        b = by_point.get(point)
        if b is None or _rank_key(req, s) > _rank_key(req, b):
            by_point[point] = s
    points = sorted(by_point, key=lambda p: (p[0], p[1], -p[2], -p[3]))
    front: list[tuple[tuple[int, float, int, int], Setting]] = []
    for pt in points:
        if any(q[0] <= pt[0] and q[1] <= pt[1] and q[2] >= pt[2] and q[3] >= pt[3] for q, _ in front):
            continue
        front.append((pt, by_point[pt]))
    return [s for _, s in front][:MAX_PARETO]


def _budget_body(req: RecommendRequest, kind: Kind) -> dict:
    """The budget of a kind's plans as a PlanRequest body states it."""
    if req.gpu is not None:
        return {"gpu": kind.spelling}
    assert req.budget is not None
    return req.budget.model_dump(exclude_none=True)


def _candidate(req: RecommendRequest, kinds: list[Kind], s: Setting) -> Candidate | None:
    """Re-plan the setting from its own launch flags, as POST /v1/plan would, on its GPU."""
    from mambasizer.service import requests as front_door
    from mambasizer.service.planner import plan

    flags = launch_flags(s.args)
    env = {k: str(int(v)) if isinstance(v, bool) else str(v) for k, v in req.env.model_dump(exclude_defaults=True).items()}
    if s.partition is not None:
        env["SGLANG_PP_LAYER_PARTITION"] = s.partition
    body: dict = {
        "model": req.model.model_dump(exclude_defaults=True),
        "sglang_args": flags,
        "budget": _budget_body(req, kinds[s.kind]),
        "sglang_version": req.sglang_version,
    }
    if env:
        body["env"] = env
    if req.draft_model is not None:
        body["draft_model"] = req.draft_model.model_dump()
    p = plan(front_door.prepare(body).request)
    if not p.feasible or (p.max_running_requests, p.max_total_num_tokens, p.max_mamba_cache_size) != (
        s.plan.max_running_requests, s.plan.max_total_num_tokens, s.plan.max_mamba_cache_size
    ):
        return None  # a recommendation the re-plan does not confirm is never returned
    n, tokens = _totals(p)
    checks = target_checks(req, p)
    gpus = p.resolved.tp_size * p.resolved.pp_size
    return Candidate.trusted({
        "gpu": kinds[s.kind].name, "cost_per_hour": cost_per_hour(gpus, kinds[s.kind]), "gpus": gpus, "tp_size": p.resolved.tp_size, "pp_size": p.resolved.pp_size,
        "attn_dp_size": p.resolved.attn_dp_size, "sglang_args": flags, "env": env,
        "meets_target": all(c.met for c in checks.values()), "targets": checks,
        "max_running_requests": n, "max_total_num_tokens": tokens, "max_mamba_cache_size": p.max_mamba_cache_size,
        "binding_limit": p.binding_limit, "plan": p,
    })


def _answer(req: RecommendRequest, kinds: list[Kind], search: _Searched) -> RecommendResponse:
    warnings = list(search.warnings)
    out: list[Candidate] = []
    for s in _pick(req, search.settings):
        if len(out) == req.limit:
            break
        c = _candidate(req, kinds, s)
        if c is None:
            warnings.append(f"mambasizer: a setting ({' '.join(launch_flags(s.args))}) did not re-plan to the searched figures and was dropped")
            continue
        out.append(c)
    pareto = [c for c in (_candidate(req, kinds, s) for s in _front(req, search.settings)) if c is not None]
    if req.budget is not None and not req.budget.estimated and any(c.pp_size > 1 or c.tp_size != req.server_args.tp_size for c in out):
        warnings.append(
            "mambasizer: the measured budget is taken as holding for every parallel layout searched; the free memory "
            'after load changes with the weights per rank, so re-measure the chosen layout (or plan with "gpu").'
        )
    return RecommendResponse.trusted({
        "objective": req.objective, "candidates": out, "pareto": pareto, "searched": search.searched,
        "refused": dict(sorted(search.refused.items())), "why": _why(req, kinds, out, search), "warnings": warnings,
    })


def _why(req: RecommendRequest, kinds: list[Kind], out: list[Candidate], search: _Searched) -> str:
    if not out:
        reasons = ", ".join(f"{k} ({v})" for k, v in search.refused.most_common(3)) or "none"
        return f"No searched setting starts: {search.searched} plans run, SGLang would refuse them all (most often: {reasons})."
    c = out[0]
    p = c.plan
    named = f" {c.gpu}" if compares_kinds(kinds) and c.gpu is not None else ""
    parts = [f"{c.gpus}{named} GPUs per replica (tp {c.tp_size} x pp {c.pp_size}"
             + (f", attention DP {c.attn_dp_size}" if c.attn_dp_size > 1 else "") + ")"
             + (f" at {c.cost_per_hour:,.2f} per hour" if c.cost_per_hour is not None else "")]
    goal = {"fewest_gpus": "the fewest GPUs", "most_requests": "the most running requests", "most_tokens": "the most KV tokens",
            "cheapest": "the lowest cost per hour"}[req.objective]
    if len(kinds) > 1:
        goal += f" of {len(kinds)} GPU kinds ({', '.join(k.name or '?' for k in kinds)})"
    if c.meets_target:
        lead = f"{parts[0]} is the setting with {goal} that meets every target"
    elif c.targets:
        missed = ", ".join(f"{k} by {-v.margin:,}" for k, v in c.targets.items() if not v.met)
        lead = f"No searched setting meets every target; {parts[0]} comes closest for {goal} (misses {missed})"
    else:
        lead = f"{parts[0]} gives {goal}"
    detail = [f"{release_label(p.reference)} would start with max_running_requests {c.max_running_requests:,}, {c.max_total_num_tokens:,} KV tokens and {c.max_mamba_cache_size:,} mamba slots per worker; {_binding(p.binding_limit)}"]
    if "SGLANG_PP_LAYER_PARTITION" in c.env:
        w = [s.weights_bytes for s in p.stages if s.weights_bytes is not None]
        mm = max(s.mamba_layers for s in p.stages)
        ff = max(s.full_attention_layers for s in p.stages)
        detail.append(
            f"the layer partition {c.env['SGLANG_PP_LAYER_PARTITION']} (exact optimum over contiguous partitions) sets the largest stage to "
            + (f"{max(w) / GIB:.2f} GiB of weights, " if w else "")
            + f"{mm} mamba and {ff} full-attention layers" + _against_default(req, _kind_of(kinds, c), c)
        )
    if "--max-mamba-cache-size" in c.sglang_args and "max_mamba_cache_size" not in req.server_args.model_fields_set:
        K, R, dp = p.resolved.max_mamba_cache_size, req.target.running_requests, p.resolved.attn_dp_size
        if R is not None and K == -(-R // dp) * _known(p.mamba_ratio) * dp:
            detail.append(f"--max-mamba-cache-size {K} is the least that serves {R:,} requests ({p.mamba_ratio} slots each): every other byte goes to KV")
        else:
            detail.append(f"--max-mamba-cache-size {K} is where neither pool idles: the slots and the KV tokens serve the same number of requests")
    if "--mem-fraction-static" in c.sglang_args and "mem_fraction_static" not in req.server_args.model_fields_set:
        detail.append(f"--mem-fraction-static {p.resolved.mem_fraction_static} keeps SGLang's pre-capture activation reserve")
    refused = sum(search.refused.values())
    tail = f"{search.searched} plans searched, {refused} refused by SGLang's own checks."
    if p.budget_source == "estimated":
        tail += " Memory is estimated from the GPU (weights exact, CUDA/NCCL residents calibrated): measure one boot before relying on a thin margin."
    return f"{lead}: " + "; ".join(detail) + ". " + tail


def _kind_of(kinds: list[Kind], c: Candidate) -> Kind:
    return next((k for k in kinds if k.name == c.gpu), kinds[0])


def _against_default(req: RecommendRequest, kind: Kind, c: Candidate) -> str:
    """What SGLang's default (even) partition gives with the same flags."""
    from mambasizer.service import requests as front_door
    from mambasizer.service.planner import plan

    env = {k: v for k, v in c.env.items() if k != "SGLANG_PP_LAYER_PARTITION"}
    body: dict = {"model": req.model.model_dump(exclude_defaults=True), "sglang_args": c.sglang_args,
                  "budget": _budget_body(req, kind)}
    if env:
        body["env"] = env
    if req.draft_model is not None:
        body["draft_model"] = req.draft_model.model_dump()
    p = plan(front_door.prepare(body).request)
    if not p.feasible:
        return f" (SGLang's default partition would not start: {p.error.kind if p.error else 'refused'})"
    n, tokens = _totals(p)
    return f" (SGLang's default partition: {n:,} requests, {tokens:,} KV tokens)"


def _binding(limit: str | None) -> str:
    return {
        "mamba_slots": "the mamba slots bind the requests",
        "kv_tokens": "the KV tokens bind the requests",
        "user_max_running_requests": "--max-running-requests caps the requests",
        "speculative_default": "speculative decoding's default of 48 caps the requests",
        "estimate": "SGLang's own context-length estimate caps the requests",
    }.get(limit or "", "nothing binds")


def recommend_grid(req: RecommendRequest, grid: list[dict], plans_spent: int = 0) -> tuple[RecommendResponse, int]:
    """recommend() over a grid its caller built (each point a ServerArgs update) on the
    request's one GPU, sharing the MAX_PLANS bound with searches before it (`plans_spent`):
    (the answer, plans spent after it). The disaggregated recommender
    (service/recommend/disaggregated.py) searches each role so."""
    kinds = kinds_of(req)[:1]
    shared = _Shared()
    shared.plans = plans_spent
    search = _Search(req, None, kinds[0], 0, shared)
    for i, upd in enumerate(grid):
        try:
            search.grid_point(i, upd)
        except _PlanBudgetSpent:
            search.warnings.append(f"mambasizer: the search stopped at its bound of {MAX_PLANS:,} plans after {i} of {len(grid)} settings")
            break
    return _answer(req, kinds, _Searched.of([search])), shared.plans
