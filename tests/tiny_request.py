"""TINY: a PlanRequest whose plan holds a few MiB of state and KV, small enough for a real trial
on the CPU anywhere (the worker tests, the embedded trial budget, deployments-file trials, the
Prometheus end to end). Imported by bare name from every test folder, as serving.py is."""

TINY = {
    "model": {"layout": {
        "num_hidden_layers": 4, "mamba_layer_ids": [0, 1, 2], "full_attention_layer_ids": [3],
        "state": {"conv_shapes": [[256, 3]], "temporal_shape": [4, 32, 32]},
        "kv": {"type": "mha", "num_kv_heads": 2, "head_dim": 64}, "context_length": 2048,
    }},
    "budget": {"rest_gib": 0.02},
}
