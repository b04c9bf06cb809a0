"""Sample inputs more than one test folder uses; imported by bare name (`from samples import
TINY`), as serving.py is."""

# A PlanRequest whose plan holds a few MiB of state and KV, small enough for a real trial on
# the CPU anywhere (the worker tests, the embedded trial budget, deployments-file trials, the
# Prometheus end to end).
TINY = {
    "model": {"layout": {
        "num_hidden_layers": 4, "mamba_layer_ids": [0, 1, 2], "full_attention_layer_ids": [3],
        "state": {"conv_shapes": [[256, 3]], "temporal_shape": [4, 32, 32]},
        "kv": {"type": "mha", "num_kv_heads": 2, "head_dim": 64}, "context_length": 2048,
    }},
    "budget": {"rest_gib": 0.02},
}

# An explicit hybrid layout (Nemotron-H-like: 6 mamba layers, 2 full-attention layers at 3 and 7)
# for the layout validation and architecture tests.
LAYOUT_8 = {
    "num_hidden_layers": 8,
    "mamba_layer_ids": [0, 1, 2, 4, 5, 6],
    "full_attention_layer_ids": [3, 7],
    "state": {"conv_shapes": [[10240, 3]], "temporal_shape": [128, 64, 128]},
    "kv": {"type": "mha", "num_kv_heads": 8, "head_dim": 128},
    "context_length": 32768,
}
