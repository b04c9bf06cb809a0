"""Start-up line wordings that tell SGLang releases apart, and the releases that print each.

Source: the project's release research (every PyPI wheel 0.5.8 ... 0.5.23 unpacked and its
log format strings diffed; "Start-up log formats" table of the research note
SGLANG_RELEASES.md §5, written 2026-12-01). The rows used here, as that table gives them:

    Load weight end. type=..., dtype=..., avail mem=...                 0.5.8 - 0.5.8.post1
    Load weight end. elapsed=... s, type=..., dtype=..., avail mem=...  0.5.9
    Load weight end. elapsed=... s, type=..., [quant, ]avail mem=...    0.5.10 - 0.5.23 (no dtype)
    Load weight end. Committed real weights after CUDA graph capture    0.5.18 on
    Init torch distributed ends. mem usage=... GB                       0.5.8
    Init torch distributed ends. elapsed=... s, mem usage=... GB        0.5.9 - 0.5.20 (none from 0.5.21)
    KV Cache is allocated. #tokens: ...                                 0.5.8 - 0.5.12.post1
    KV Cache is allocated. dtype: ..., #tokens: ...                     0.5.13 on
    KV Cache VA upper bound. dtype: ...                                 0.5.18 on
    Max concurrent requests (per dp worker) from the finalized token capacity   0.5.13 only
    max_running_requests was reduced from the requested ...             0.5.14 on
    max_running_requests is capped to ... by the mamba state cache      0.5.17 on
    Reserving ... GB of the KV budget for post-sizing multimodal ...    0.5.18 on
    Post-capture KV sizing: ...                                         0.5.16 on

A line that does not show the distinguishing part (an operator's `Load weight end. ...`) marks
nothing: each rule needs the words its wording is told apart by.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mark:
    name: str
    first: str  # first base release that prints it
    last: str | None  # last base release that prints it (None: still printed by 0.5.23)
    says: str  # the wording, for the answer's evidence


MARKS: dict[str, Mark] = {
    m.name: m
    for m in (
        Mark("load_end_dtype", "0.5.8", "0.5.8", "'Load weight end' with dtype= and no elapsed="),
        Mark("load_end_elapsed_dtype", "0.5.9", "0.5.9", "'Load weight end' with elapsed= and dtype="),
        Mark("load_end_no_dtype", "0.5.10", None, "'Load weight end' with elapsed= and type= but no dtype="),
        Mark("load_end_committed", "0.5.18", None, "'Load weight end. Committed real weights after CUDA graph capture'"),
        Mark("torch_dist_no_elapsed", "0.5.8", "0.5.8", "'Init torch distributed ends' without elapsed="),
        Mark("torch_dist_elapsed", "0.5.9", "0.5.20", "'Init torch distributed ends' with elapsed="),
        Mark("kv_no_dtype", "0.5.8", "0.5.12", "'KV Cache is allocated' without dtype:"),
        Mark("kv_dtype", "0.5.13", None, "'KV Cache is allocated' with dtype:"),
        Mark("kv_va_upper_bound", "0.5.18", None, "'KV Cache VA upper bound'"),
        Mark("max_concurrent_finalized", "0.5.13", "0.5.13", "'Max concurrent requests (per dp worker) from the finalized token capacity'"),
        Mark("mrr_reduced", "0.5.14", None, "'max_running_requests was reduced from the requested'"),
        Mark("mrr_capped_mamba", "0.5.17", None, "'max_running_requests is capped to ... by the mamba state cache'"),
        Mark("mm_reserve", "0.5.18", None, "'Reserving ... GB of the KV budget for post-sizing multimodal'"),
        Mark("post_capture_kv", "0.5.16", None, "'Post-capture KV sizing:'"),
    )
}


def marks(body: str) -> list[str]:
    """The marks one start-up record shows (its rank prefix already stripped)."""
    out: list[str] = []
    at = body.find("Load weight end")
    if at >= 0:
        rest = body[at:]
        if "Committed real weights after CUDA graph capture" in rest:
            out.append("load_end_committed")
        else:
            has_dtype = "dtype=" in rest
            has_elapsed = "elapsed=" in rest
            # ` type=` / `,type=`: the class word, not the tail of `dtype=`.
            has_type = any(f"{c}type=" in rest for c in " ,.")
            if has_dtype and has_elapsed:
                out.append("load_end_elapsed_dtype")
            elif has_dtype:
                out.append("load_end_dtype")
            elif has_elapsed and has_type:
                out.append("load_end_no_dtype")
    at = body.find("Init torch distributed ends")
    if at >= 0 and "mem usage=" in body[at:]:
        out.append("torch_dist_elapsed" if "elapsed=" in body[at:] else "torch_dist_no_elapsed")
    at = body.find("KV Cache is allocated")
    if at >= 0 and "Post-capture KV sizing" not in body:
        rest = body[at:]
        if "dtype:" in rest:
            out.append("kv_dtype")
        elif "#tokens:" in rest:
            out.append("kv_no_dtype")
    if "KV Cache VA upper bound" in body:
        out.append("kv_va_upper_bound")
    if "from the finalized token capacity" in body and "Max concurrent requests" in body:
        out.append("max_concurrent_finalized")
    if "max_running_requests was reduced from the requested" in body:
        out.append("mrr_reduced")
    if "max_running_requests is capped to" in body and "by the mamba state cache" in body:
        out.append("mrr_capped_mamba")
    if "of the KV budget for post-sizing multimodal" in body:
        out.append("mm_reserve")
    if "Post-capture KV sizing:" in body:
        out.append("post_capture_kv")
    return out
