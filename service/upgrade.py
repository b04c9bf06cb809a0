"""What an SGLang upgrade does to one deployment: the plan at the running release against the
plan at the target release, read off the two Plans (as `POST /v1/plan` answers them, JSON
dicts, so `mambasizer check --upgrade-to --url` judges the service's answers the same way).

* starts: whether the target release still starts the deployment by the plan's own rules
  (the plan's `feasible`, with SGLang's error when it does not).
* capacity: running requests and KV tokens (`max_running_requests`, `max_total_num_tokens`)
  at both releases and the share lost (0 when the upgrade gains).
* slack, per PP stage: what the GPU keeps outside the weights and the pools once they are
  allocated, free memory after load minus the mamba pool, the KV pool and the req-to-token
  table. It is what activations, CUDA graphs, NCCL and every allocation after sizing
  (DeepEP, symmetric memory) live in, and what the seed's upgrade lost when the per-stage
  charge put the old over-charge into the pools. Null when the budget was given as `rest_gib`
  (the memory outside the split is then unknown).

Used by POST /v1/plan/compare (release mode's `upgrade`), `mambasizer check --upgrade-to`
and the deployments file's `upgrade_to`.
"""

from __future__ import annotations

GIB = float(1 << 30)
CAPACITY_FIELDS = ("max_running_requests", "max_total_num_tokens")
CAPACITY_LABELS = {"max_running_requests": "running requests", "max_total_num_tokens": "KV tokens"}
# `mambasizer check --upgrade-to` fails past these shares unless told otherwise (README "What an
# upgrade changes"): a tenth of the capacity, half of the slack.
DEFAULT_MAX_CAPACITY_LOSS = 0.10
DEFAULT_MAX_SLACK_LOSS = 0.50


def _mamba_pool(stage: dict) -> int:
    return sum(int(stage.get(k) or 0) for k in ("conv_state_bytes", "ssm_state_bytes", "intermediate_state_bytes", "replayssm_ring_bytes"))


def stage_slack_bytes(plan: dict) -> list[int | None]:
    """Per stage (in `plan["stages"]` order): free bytes after load minus the pools allocated
    on it; None when the plan does not start or its budget carries no free-memory figure."""
    if not plan.get("feasible"):
        return [None for _ in plan.get("stages") or []]
    world = plan.get("free_gib_after_load")
    out: list[int | None] = []
    for st in plan.get("stages") or []:
        free = st.get("free_gib_after_load")
        free = world if free is None else free  # measured budgets: the world MIN SGLang sized with
        if free is None:
            out.append(None)
            continue
        pools = _mamba_pool(st) + int(st.get("kv_pool_bytes") or 0) + int(st.get("req_to_token_bytes") or 0)
        out.append(int(free * GIB) - pools)
    return out


def _loss(before: int | float | None, after: int | float | None) -> float | None:
    """Share of `before` lost (0 when it grows); None when either is unknown or before is 0."""
    if before is None or after is None or before <= 0:
        return None
    return max(0.0, (before - after) / before)


def summary(base: dict, cand: dict, from_version: str, to_version: str) -> dict:
    """The upgrade block: starts, capacity and per-stage slack at both releases, with the losses."""
    error = cand.get("error") or {}
    capacity = {
        f: {"from": base.get(f), "to": cand.get(f), "loss": _loss(base.get(f), cand.get(f)) if cand.get("feasible") else None}
        for f in CAPACITY_FIELDS
    }
    slack = []
    for st, b, c in zip(cand.get("stages") or [], stage_slack_bytes(base), stage_slack_bytes(cand), strict=False):
        slack.append({"pp_rank": st.get("pp_rank"), "from_bytes": b, "to_bytes": c, "loss": _loss(b, c)})
    return {
        "from_version": from_version,
        "to_version": to_version,
        "started": bool(base.get("feasible")),
        "starts": bool(cand.get("feasible")),
        "start_error": None if cand.get("feasible") else (error.get("message") or "SGLang would not start"),
        "capacity": capacity,
        "slack": slack,
    }


def failures(up: dict, max_capacity_loss: float, max_slack_loss: float) -> list[str]:
    """One readable sentence per way the upgrade fails its limits (no start, capacity or slack
    lost past the shares given); empty when it passes."""
    old, new = f"SGLang {up['from_version']}", f"SGLang {up['to_version']}"
    if not up["starts"]:
        if not up["started"]:
            return [f"neither {old} nor {new} would start it: {up['start_error']}"]
        return [f"{new} would not start what {old} starts: {up['start_error']}"]
    if not up["started"]:
        return []  # the upgrade fixes a deployment that does not start: nothing is lost
    out = []
    for field, c in up["capacity"].items():
        if c["loss"] is not None and c["loss"] > max_capacity_loss:
            out.append(
                f"{new} plans {c['to']} {CAPACITY_LABELS[field]} ({field}) where {old} plans {c['from']}: "
                f"{c['loss']:.1%} lost, more than --max-capacity-loss {max_capacity_loss:g}"
            )
    worst = max((s for s in up["slack"] if s["loss"] is not None), key=lambda s: s["loss"], default=None)
    if worst is not None and worst["loss"] > max_slack_loss:
        out.append(
            f"{new} leaves {worst['to_bytes'] / GIB:.2f} GiB outside the pools on pp_rank {worst['pp_rank']} where {old} "
            f"left {worst['from_bytes'] / GIB:.2f} GiB: {worst['loss']:.1%} of the slack lost (activations, CUDA graphs, "
            f"NCCL live there), more than --max-slack-loss {max_slack_loss:g}"
        )
    return out


def describe(up: dict) -> str:
    """One line of what the upgrade does (the pass line of `check --upgrade-to`)."""
    parts = [f"{field} {c['from']} -> {c['to']}" for field, c in up["capacity"].items()]
    known = [s for s in up["slack"] if s["loss"] is not None]
    if known:
        worst = max(known, key=lambda s: s["loss"])
        parts.append(f"slack on pp_rank {worst['pp_rank']} {worst['from_bytes'] / GIB:.2f} -> {worst['to_bytes'] / GIB:.2f} GiB")
    return ", ".join(parts)


__all__ = ["DEFAULT_MAX_CAPACITY_LOSS", "DEFAULT_MAX_SLACK_LOSS", "describe", "failures", "stage_slack_bytes", "summary"]
