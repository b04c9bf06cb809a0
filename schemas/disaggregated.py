"""A disaggregated (prefill/decode) deployment as one answer: what the pair sustains.

The request side (`{"prefill": ..., "decode": ...}`, each a POST /v1/plan body) is
`mambasizer.service.api.wire.DisaggregatedPlanRequest`; each side's Plan is the ordinary
one, this is the summary the pair adds (service/disaggregated.py computes it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mambasizer.schemas.plan import Out


class PairSummary(Out):
    prefill_replicas: int
    decode_replicas: int
    decode_concurrency: int | None = Field(
        description="Requests the decode side runs at once: max_running_requests x attn_dp_size x decode_replicas "
        "(null when the decode plan would not start)."
    )
    prefill_in_flight_requests: int | None = Field(
        description="Requests the prefill side holds at once (its max_running_requests x attn_dp_size x prefill_replicas): "
        "the prefills whose KV waits to be transferred."
    )
    decode_kv_tokens: int | None = Field(description="Logical KV tokens the decode side holds (per replica's logical_max_total_num_tokens x attn_dp_size x decode_replicas).")
    prefill_kv_tokens: int | None = Field(description="Logical KV tokens the prefill side holds, over its replicas.")
    decode_kv_tokens_per_request: int | None = Field(description="decode_kv_tokens / decode_concurrency: the context each running request can keep on average.")
    binding_side: Literal["prefill", "decode"] | None = Field(
        description="The side whose request capacity is smaller (decode_concurrency vs prefill_in_flight_requests): "
        "more replicas or memory there raises what the pair sustains; null when either side would not start."
    )
    feasible: bool = Field(description="Both sides start.")
    notes: list[str] = Field(default_factory=list)
