"""One TP rank's bytes, accumulated while a family walker describes the model."""

from __future__ import annotations

from mambasizer.service.solver.errors import PlanInputError
from mambasizer.service.solver.weights.common import (
    pad_vocab,
)
from mambasizer.service.solver.weights.quant.base import Quant


class Rank:
    """Accumulates one rank's bytes by group while the family walker describes the model."""

    def __init__(self, tp: int, ep: int, act_bytes: int, quant: Quant):
        self.tp, self.ep, self.act, self.q = tp, ep, act_bytes, quant
        self.moe_tp = tp // ep
        self.groups: dict[str, int] = {}

    def add(self, group: str, nbytes: int) -> None:
        self.groups[group] = self.groups.get(group, 0) + nbytes

    def _shard(self, n: int, what: str) -> int:
        if n % self.tp:
            raise PlanInputError("server_args.tp_size", f"{what}={n} is not divisible by the TP size {self.tp} (SGLang asserts this when it builds the model); pick a TP size that divides it")
        return n // self.tp

    # Linear layers: sizes are whole-model; parts are checkpoint names for ignore lists.
    def column(self, group, in_f, outs, name, parts=None, bias=False, quant=True):
        outs_pr = [self._shard(o, name) for o in outs]
        self._linear(group, in_f, outs_pr, name, parts, bias, quant, sharded_out=self.tp > 1)

    def row(self, group, in_f, out_f, name, bias=False, quant=True):
        self._linear(group, self._shard(in_f, name), [out_f], name, None, bias, quant, sharded_in=self.tp > 1)

    def replicated(self, group, in_f, out_f, name, bias=False, quant=True):
        self._linear(group, in_f, [out_f], name, None, bias, quant)

    def qkv(self, group, hidden, head_dim, heads, kv_heads, name, parts, bias=False, quant=True, v_head_dim=None):
        q = self._shard(heads, f"{name} num_heads") * head_dim
        if kv_heads >= self.tp:
            kv = self._shard(kv_heads, f"{name} num_kv_heads")
        else:
            if self.tp % kv_heads:
                raise PlanInputError("server_args.tp_size", f"the TP size {self.tp} is not a multiple of num_key_value_heads={kv_heads} (SGLang asserts this)")
            kv = 1  # fewer KV heads than TP ranks: each rank holds one, replicated
        self._linear(group, hidden, [q, kv * head_dim, kv * (v_head_dim or head_dim)], name, parts, bias, quant, sharded_out=self.tp > 1)

    def _linear(self, group, in_pr, outs_pr, name, parts, bias, quant, sharded_in=False, sharded_out=False):
        q = self.q if quant else Quant(self.act)
        q.sharded_in, q.sharded_out = sharded_in, sharded_out
        self.add(group, q.linear(in_pr, outs_pr, parts or [name]) + (sum(outs_pr) * self.act if bias else 0))

    def kv_scales(self):
        """A RadixAttention built with the quant config: its KV-cache method's scales."""
        self.add("attention", self.q.kv_scale_bytes)

    def params(self, group, n, dtype_bytes=None):
        self.add(group, n * (self.act if dtype_bytes is None else dtype_bytes))

    def experts(self, group, n_experts, hidden, inter, name, gated=True, n_fused_shared=0):
        if n_experts % self.ep:
            raise PlanInputError("server_args.ep_size", f"{name}: {n_experts} experts do not split over ep_size={self.ep}")
        if inter % self.moe_tp:
            raise PlanInputError("server_args.tp_size", f"{name}: moe_intermediate_size={inter} is not divisible by tp/ep={self.moe_tp}")
        local = n_experts // self.ep + n_fused_shared
        i_pr = inter // self.moe_tp
        self.q.n_global = n_experts + n_fused_shared
        self.q.moe_tp = self.moe_tp
        self.add(group, self.q.experts(local, (2 if gated else 1) * i_pr, hidden, i_pr, [name]))

    def vocab(self, group, vocab, hidden, name, quant=False, dtype_bytes=None):
        per_rank = pad_vocab(vocab, self.tp) // self.tp
        q = self.q if quant and self.q.quantizes_lm_head else Quant(dtype_bytes or self.act)
        self.add(group, q.linear(hidden, [per_rank], [name]))
