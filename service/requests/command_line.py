"""The command-line form of a launch -> the same request body `POST /v1/plan` takes.

    mambasizer check [--preset NAME] (--gpu NAME [--gpu-memory-mib N] | --gpu-memory-mib N | --budget-gib X)
                     [--reserved-gib X] [--sglang-version RELEASE] -- <sglang launch args...>
    mambasizer check ... -- <the prefill node's launch args> -- <the decode node's launch args>

The Helm preflight hook renders exactly this form (helm/mambasizer-preflight), so a values
block reaches the front door through it. The launch words are not parsed here: they become
the body's `sglang_args`, which `prepare` parses with the release's own parser, resolves
`--model-path` from, and refuses by name exactly as the API does. One body, one verdict.
"""

from __future__ import annotations

from typing import Any


class UsageError(ValueError):
    """The command-line flags do not make a request (a budget missing or given twice); the
    message names the flags and the forms accepted."""


BUDGET_FORMS = "--gpu NAME (or --gpu-memory-mib N) to plan from the GPU alone, or --budget-gib X"


def gpu_budget(gpu: Any, gpu_memory_mib: int | None, reserved_gib: float | None,
               host_available_mib: int | None = None) -> dict | None:
    """The estimated budget the GPU flags ask for (budget.gpu: a catalog name or a device
    description / gpu_memory_mib / reserved_gib / host_available_mib), or None."""
    if host_available_mib is not None and gpu is None:
        raise UsageError("--host-available-mib needs --gpu (an integrated part: gb10, mi300a, strix-halo)")
    if gpu is None and gpu_memory_mib is None:
        if reserved_gib is not None:
            raise UsageError("--reserved-gib needs --gpu or --gpu-memory-mib")
        return None
    budget: dict[str, Any] = {k: v for k, v in (("gpu", gpu), ("gpu_memory_mib", gpu_memory_mib)) if v is not None}
    if reserved_gib is not None:
        budget["reserved_gib"] = reserved_gib
    if host_available_mib is not None:
        budget["host_available_mib"] = host_available_mib
    return budget


def budget_of(gpu: Any, gpu_memory_mib: int | None, reserved_gib: float | None, budget_gib: float | None,
              host_available_mib: int | None = None) -> dict | None:
    """The budget section the flags give (None when they give none)."""
    from_gpu = gpu_budget(gpu, gpu_memory_mib, reserved_gib, host_available_mib)
    if from_gpu is not None and budget_gib is not None:
        raise UsageError("give --budget-gib or --gpu / --gpu-memory-mib, not both")
    if budget_gib is not None:
        return {"rest_gib": budget_gib}
    return from_gpu


def launch_body(argv: list[str], *, budget: dict | None, preset: str | None = None, release: str | None = None) -> dict:
    """The request body for a launch line: the model from `preset` or the line's `--model-path`
    (both: they must name one checkpoint), the budget, and the release whose parser reads it."""
    if budget is None:
        raise UsageError(f"a launch line needs a budget: {BUDGET_FORMS}")
    if not argv and preset is None:
        raise UsageError("give the launch arguments after `--` (with --model-path, or --preset NAME)")
    body: dict[str, Any] = {"budget": budget, "sglang_args": [str(a) for a in argv]}
    if preset is not None:
        body["model"] = {"preset": preset}
    if release is not None:
        body["sglang_version"] = release
    return body


PAIR_SEPARATOR = "--"


def launch_sides(argv: list[str]) -> list[list[str]]:
    """The launch lines in `argv`: one, or a 1P1D pair's two (prefill, then decode) split at a
    second `--` (the first ends the command's own options)."""
    words = [str(a) for a in argv]
    if PAIR_SEPARATOR not in words:
        return [words]
    at = words.index(PAIR_SEPARATOR)
    sides = [words[:at], words[at + 1:]]
    if PAIR_SEPARATOR in sides[1]:
        raise UsageError("a launch pair is two lines: -- <prefill launch args> -- <decode launch args>; give `--` twice at most")
    if not all(sides):
        raise UsageError("a launch pair needs both lines: -- <prefill launch args> -- <decode launch args>")
    return sides


def launch_request(argv: list[str], *, budget: dict | None, preset: str | None = None, release: str | None = None) -> dict:
    """The body for one launch line, or `{"prefill": ..., "decode": ...}` for a pair's two
    (each side gets its role from its place unless its line sets --disaggregation-mode)."""
    sides = launch_sides(argv)
    if len(sides) == 1:
        return launch_body(sides[0], budget=budget, preset=preset, release=release)
    return {role: launch_body(line, budget=budget, preset=preset, release=release)
            for role, line in zip(("prefill", "decode"), sides, strict=True)}
