"""The GPU kinds one recommendation compares, and what a replica of each costs per hour.

`RecommendRequest.gpu` names one catalog part or a list of them (at most MAX_GPU_KINDS);
`gpu_prices` maps a requested part to its price per GPU-hour. Every part is checked against
the catalog (service/solver/gpus.py) before any plan runs: an unknown one, or one whose
capacity no public source confirms (recommend plans from the catalog figure), is the
request's error on `gpu`. Two spellings of one part (`h200`, `H200-SXM`) are one kind, kept
at its first spelling (the budget every plan of that kind is given).

A candidate is one replica (GPUs per replica = tp_size x pp_size; the search does not model
replicas), so its cost is GPUs per replica x the kind's price.
"""

from __future__ import annotations

from typing import NamedTuple

from mambasizer.schemas.recommend import MAX_GPU_KINDS, RecommendRequest
from mambasizer.schemas.request import DeviceDescription
from mambasizer.service.solver import gpus
from mambasizer.service.solver.errors import PlanInputError


class Kind(NamedTuple):
    name: str | None  # the catalog name a candidate reports; None: a budget that names no GPU
    spelling: str | DeviceDescription | None  # as the request wrote it: the `budget.gpu` its plans are given
    price: float | None  # per GPU-hour, when gpu_prices gives one


def check_shape(value: object) -> None:
    """`gpu` as the request sent it (before validation): one name or a bounded list of names.
    pydantic reports a wrong member of a union under the union's first branch (a list as
    `gpu.constrained-str: should be a valid string`), so the shape is judged here."""
    if value is None:
        return
    if isinstance(value, str):
        if not 1 <= len(value) <= 64:
            raise PlanInputError("gpu", "must be a catalog GPU name (GET /v1/gpus), 1 to 64 characters", sorted(gpus.CATALOG))
        return
    if not isinstance(value, list):
        raise PlanInputError("gpu", f'must be a catalog GPU name (e.g. "h200") or a list of at most {MAX_GPU_KINDS} of them')
    if not 1 <= len(value) <= MAX_GPU_KINDS:
        raise PlanInputError("gpu", f"lists {len(value)} GPUs; compare 1 to {MAX_GPU_KINDS} GPU kinds in one request")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not 1 <= len(item) <= 64:
            raise PlanInputError(f"gpu.{i}", "must be a catalog GPU name (GET /v1/gpus), 1 to 64 characters", sorted(gpus.CATALOG))


def _confirmed(spelling: str) -> gpus.Gpu:
    try:
        named = gpus.lookup(spelling)  # an unknown or unmodelled GPU is the request's error, not a refusal
    except PlanInputError as exc:
        raise PlanInputError("gpu", exc.message, exc.allowed) from None
    if not named.confirmed:
        raise PlanInputError(
            "gpu", f"{named.name!r} has no confirmed capacity ({named.source}): recommend plans from the catalog figure; "
            "plan it with /v1/plan and budget {\"gpu\": ..., \"gpu_memory_mib\": N} instead",
            sorted(n for n, g in gpus.CATALOG.items() if g.confirmed),
        )
    return named


def kinds_of(req: RecommendRequest) -> list[Kind]:
    """The kinds to search, in the request's order (the last tie-break), with their prices.
    Raises PlanInputError naming `gpu`, `gpu_prices` or `objective`."""
    if req.gpu is not None:
        spellings = [req.gpu] if isinstance(req.gpu, str) else list(req.gpu)
        found: dict[str, str] = {}
        for spelling in spellings:
            found.setdefault(_confirmed(spelling).name, spelling)
        named: list[tuple[str | None, str | DeviceDescription | None]] = list(found.items())
    else:
        assert req.budget is not None  # RecommendRequest requires exactly one of them
        b = req.budget.gpu
        named = [(gpus.lookup(b).name if b is not None else None, b)]
    prices = _prices(req, [n for n, _ in named if n is not None])
    out = [Kind(n, s, prices.get(n) if n is not None else None) for n, s in named]
    if req.objective == "cheapest":
        missing = [k.name or "the budget's GPU" for k in out if k.price is None]
        if missing:
            field = "objective" if req.gpu_prices is None else "gpu_prices"
            raise PlanInputError(
                field, "cheapest compares the cost per hour: give gpu_prices (price per GPU-hour) for every requested GPU; "
                f"missing: {', '.join(missing)}" + ("" if req.gpu is not None else ' (name the GPU as "gpu" or budget.gpu)'),
                [n for n, _ in named if n is not None],
            )
    return out


def _prices(req: RecommendRequest, names: list[str]) -> dict[str, float]:
    """gpu_prices by catalog name; every key must be a requested GPU."""
    out: dict[str, float] = {}
    for key, price in (req.gpu_prices or {}).items():
        try:
            name = gpus.lookup(key).name
        except PlanInputError:
            name = None
        if name is None or name not in names:
            raise PlanInputError(
                f"gpu_prices.{key}", f"{key!r} is not one of the requested GPUs ({', '.join(names) or 'none named'}): "
                "price only the GPUs in `gpu`", names,
            )
        if name in out:
            raise PlanInputError(f"gpu_prices.{key}", f"prices {name!r} twice (under two spellings): give one price per GPU", names)
        out[name] = price
    return out


def cost_per_hour(gpus_per_replica: int, kind: Kind) -> float | None:
    """One replica's price per hour (GPUs per replica x the price per GPU-hour)."""
    # Rounded to a millionth so that 3 x 0.1 reads 0.3 (prices are given to a few decimals).
    return None if kind.price is None else round(gpus_per_replica * kind.price, 6)


def compares_kinds(kinds: list[Kind]) -> bool:
    """The answer names each candidate's GPU (and cost) in its text: several kinds, or priced."""
    return len(kinds) > 1 or any(k.price is not None for k in kinds)
