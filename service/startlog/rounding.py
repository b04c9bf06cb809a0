"""How far the log's own rounding can move a predicted figure.

check-log plans with the free memory SGLang printed: `avail mem=%.2f GB` before and after the
weights load, each the probe's bytes / 2**30 rounded to two decimals, so the true figure is
within ±0.005 GB of the printed one. When the log has no 'Load weight begin' line, the free
memory before the load is rebuilt as after-load + `mem usage` (two printed figures): ±0.01 GB.

The bound on a predicted figure is that box carried through the plan itself: the request is
planned at the box's four corners (each free-memory figure at its low and high end) and the
figure's smallest and largest value there bound what the rounding can do (the pools grow with
the memory after the load and shrink with the memory before it, so a corner holds each
extreme). A difference outside that span cannot be the log's rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

HALF_STEP_GB = 0.005  # a %.2f figure is within half its last digit of the true value


@dataclass(frozen=True)
class RoundingBox:
    """± GB on each free-memory figure the rebuilt budget takes from the log."""

    before_gb: float
    after_gb: float
    before_rebuilt: bool  # before = after + mem usage: two printed figures

    def describe(self) -> str:
        if self.before_rebuilt:
            return (
                f"free memory printed to 2 decimals: ±{self.after_gb:g} GB after the load, ±{self.before_gb:g} GB before it "
                "(rebuilt as after-load + mem usage, two printed figures)"
            )
        return f"free memory printed to 2 decimals: ±{self.after_gb:g} GB each, before and after the load"


def box(before_rebuilt: bool) -> RoundingBox:
    return RoundingBox(
        before_gb=2 * HALF_STEP_GB if before_rebuilt else HALF_STEP_GB, after_gb=HALF_STEP_GB, before_rebuilt=before_rebuilt,
    )


def corner_requests(request: dict, bound: RoundingBox) -> list[dict]:
    """`request` (a measured budget) at the four corners of the rounding box."""
    budget = request["budget"]
    before, after = budget["free_gib_before_load"], budget["free_gib_after_load"]
    out = []
    for d_before in (-bound.before_gb, bound.before_gb):
        for d_after in (-bound.after_gb, bound.after_gb):
            corner = {**budget, "free_gib_before_load": round(before + d_before, 6), "free_gib_after_load": round(after + d_after, 6)}
            out.append({**request, "budget": corner})
    return out


__all__ = ["HALF_STEP_GB", "RoundingBox", "box", "corner_requests"]
