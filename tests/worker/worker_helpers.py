"""Shared pieces of the worker tests: small plans (1-2 GiB at most, CI has 2 cores and
24 GiB), slow / gated backends for the fault tests, a fake CUDA device, and a real
uvicorn server on a free port for the client tests."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from mambasizer.schemas.request import PlanRequest
from mambasizer.service.worker.devices import CpuBackend
from serving import free_port

GIB = 1 << 30

# Qwen3-Next (GDN, MHA KV) at tp 8 with a short context: ~1.0 GiB on one stage.
QWEN_SMALL = {
    "model": {"preset": "qwen3-next-80b-a3b-instruct"},
    "server_args": {"tp_size": 8, "context_length": 8192},
    "budget": {"rest_gib": 1.0},
}
# The same with MTP speculative decoding and page 16: spec intermediates, padded pages.
QWEN_SPEC = {
    "model": {"preset": "qwen3-next-80b-a3b-instruct"},
    "server_args": {"tp_size": 8, "context_length": 8192, "speculative_algorithm": "NEXTN", "page_size": 16},
    "budget": {"rest_gib": 1.25},
}
# Kimi-Linear (KDA, MLA KV) over two PP stages: ~1 GiB per stage, freed in between.
KIMI_PP2 = {
    "model": {"preset": "kimi-linear-48b-a3b-instruct"},
    "server_args": {"tp_size": 8, "pp_size": 2, "context_length": 8192},
    "budget": {"rest_gib": 1.0},
}
# Kimi-Linear with ReplaySSM spec: rings, and conv windows allocated but never charged.
KIMI_REPLAY = {
    "model": {"preset": "kimi-linear-48b-a3b-instruct"},
    "server_args": {"tp_size": 8, "context_length": 8192, "speculative_algorithm": "NEXTN", "enable_linear_replayssm_spec": True},
    "budget": {"rest_gib": 1.25},
}
# An explicit layout with fp8 KV: a few hundred MiB.
LAYOUT_FP8 = {
    "model": {"layout": {
        "num_hidden_layers": 8, "mamba_layer_ids": [0, 1, 2, 4, 5, 6], "full_attention_layer_ids": [3, 7],
        "state": {"conv_shapes": [[1024, 3]], "temporal_shape": [8, 64, 64]},
        "kv": {"type": "mha", "num_kv_heads": 4, "head_dim": 128}, "context_length": 4096,
    }},
    "server_args": {"kv_cache_dtype": "fp8_e4m3", "page_size": 64},
    "budget": {"rest_gib": 0.25},
}
def req(body: dict) -> PlanRequest:
    return PlanRequest.model_validate(body)


class GatedBackend(CpuBackend):
    """A CPU backend whose every allocation first waits on a gate (or sleeps): a trial that
    is 'still running' for as long as a test wants."""

    def __init__(self, delay_s: float = 0.0, gate: threading.Event | None = None, cap_bytes=None) -> None:
        super().__init__(cap_bytes=cap_bytes)
        self.delay_s = delay_s
        self.gate = gate
        self.started = threading.Event()
        self.allocations = 0

    def zeros(self, shape, dtype):
        self.started.set()
        if self.gate is not None:
            self.gate.wait(timeout=30)
        if self.delay_s:
            time.sleep(self.delay_s)
        self.allocations += 1
        return super().zeros(shape, dtype)


class SingleBackendFactory:
    """A runner backend factory handing out one given backend for every device."""

    def __init__(self, backend, has_cuda: bool = False) -> None:
        self.backend = backend
        self.has_cuda = has_cuda

    def __call__(self, device: str):
        return self.backend


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@contextmanager
def serve(app):
    """Run `app` under a real uvicorn server on 127.0.0.1:<free port>; yields the base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert wait_for(lambda: server.started, timeout=15), "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
