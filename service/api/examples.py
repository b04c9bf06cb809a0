"""The OpenAPI request examples and the requestBody the plan routes attach them with.

Every example is a real request: tests/api posts each one and expects 200. Apart from
openapi.py because route modules import these while openapi.py imports a route module's
request model (CompareRequest) for the document: neither then imports the other.
"""

from __future__ import annotations

from typing import Any

from mambasizer.service.presets import PRESETS

H200_MIB = 143771  # what torch reports as an H200's total memory

_NEMOTRON_H_8B = dict(PRESETS["nemotron-h-8b-base-8k"].hf_config)

PLAN_EXAMPLES: dict[str, dict[str, Any]] = {
    "gpu": {
        "summary": "From the GPU alone: nothing measured, no boot needed",
        "description": "Qwen3-Next-80B-A3B on H200s at TP 4. mambasizer computes each stage's weights as SGLang "
        "0.5.23 loads them and estimates the CUDA/NCCL residents, then runs the same pipeline "
        "(`budget_source: \"estimated\"`). `GET /v1/gpus` lists the names.",
        "value": {
            "model": {"preset": "qwen3-next-80b-a3b-instruct"},
            "server_args": {"tp_size": 4},
            "budget": {"gpu": "h200"},
        },
    },
    "preset": {
        "summary": "A shipped preset; budget as SGLang's profiler measures it, automatic mem_fraction_static",
        "description": "Qwen3-Next-80B-A3B on H200s at TP 4 (SIZING_SPEC E1): free GiB before and after the "
        "weights load, plus the GPU's total MiB from which SGLang derives mem_fraction_static.",
        "value": {
            "model": {"preset": "qwen3-next-80b-a3b-instruct"},
            "server_args": {"tp_size": 4},
            "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 101.3, "gpu_memory_mib": H200_MIB},
        },
    },
    "preset_mem_fraction_static": {
        "summary": "Budget with an explicit --mem-fraction-static",
        "value": {
            "model": {"preset": "nemotron-h-8b-base-8k"},
            "server_args": {"mem_fraction_static": 0.85, "max_running_requests": 64},
            "budget": {"free_gib_before_load": 79.1, "free_gib_after_load": 63.6},
        },
    },
    "rest_gib": {
        "summary": "Budget as the GiB SGLang hands to the mamba split (rest_gib), pipeline parallel",
        "value": {
            "model": {"preset": "kimi-linear-48b-a3b-instruct"},
            "server_args": {"tp_size": 2, "pp_size": 2},
            "budget": {"rest_gib": 40.0},
        },
    },
    "hf_config": {
        "summary": "A model's config.json, pasted as is",
        "value": {
            "model": {"hf_config": _NEMOTRON_H_8B},
            "server_args": {"tp_size": 2, "page_size": 64},
            "budget": {"rest_gib": 60.0},
        },
    },
    "layout": {
        "summary": "An explicit layout, for a model without a config.json yet, resolved as a real architecture",
        "value": {
            "model": {
                "layout": {
                    "num_hidden_layers": 8,
                    "mamba_layer_ids": [0, 1, 2, 4, 5, 6],
                    "full_attention_layer_ids": [3, 7],
                    "state": {"conv_shapes": [[10240, 3]], "temporal_shape": [128, 64, 128]},
                    "kv": {"type": "mha", "num_kv_heads": 8, "head_dim": 128},
                    "context_length": 32768,
                    "linear_kind": "mamba2",
                    "architecture": "NemotronHForCausalLM",
                }
            },
            "budget": {"rest_gib": 20.0},
        },
    },
    "sglang_args": {
        "summary": "SGLang launch arguments in place of server_args",
        "description": "Flags as operators write them; flags that do not change sizing come back in "
        "`ignored_sglang_args`.",
        "value": {
            "model": {"preset": "nemotron-h-56b-base-8k"},
            "sglang_args": [
                "--model-path", "nvidia/Nemotron-H-56B-Base-8K",
                "--tp-size", "2", "--pp-size", "4",
                "--max-mamba-cache-size", "112",
                "--mem-fraction-static", "0.88",
                "--host", "0.0.0.0", "--port", "30000",
            ],
            "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 110.0},
        },
    },
    "infeasible": {
        "summary": "A budget SGLang would refuse: 200 with feasible=false, SGLang's error and the remedies",
        "value": {
            "model": {"preset": "qwen3-next-80b-a3b-instruct"},
            "server_args": {"tp_size": 4},
            "budget": {"rest_gib": 0.1},
        },
    },
    "trial": {
        "summary": "Ask for a trial allocation (the plan comes back either way; trial.status is 'rejected' unless the server enabled trials)",
        "value": {
            "model": {"preset": "qwen3-next-80b-a3b-instruct"},
            "server_args": {"tp_size": 4},
            "budget": {"rest_gib": 8.0},
            "trial": {},
        },
    },
}

COMPARE_EXAMPLES: dict[str, dict[str, Any]] = {
    "pipeline_parallel": {
        "summary": "PP 2: SGLang 0.5.23 charges each stage only its own share of the mamba state",
        "value": {
            "model": {"preset": "kimi-linear-48b-a3b-instruct"},
            "server_args": {"tp_size": 2, "pp_size": 2},
            "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 94.0, "gpu_memory_mib": H200_MIB},
        },
    },
    "sglang_args": {
        "summary": "The same question with SGLang launch arguments",
        "value": {
            "model": {"preset": "nemotron-h-56b-base-8k"},
            "sglang_args": ["--tp-size", "2", "--pp-size", "4", "--mem-fraction-static", "0.88"],
            "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 110.0},
        },
    },
    "release_upgrade": {
        "summary": "Release mode: the same PP 4 deployment on SGLang 0.5.16 and on 0.5.23 (the per-stage charge of 0.5.17)",
        "value": {
            "model": {"preset": "nemotron-h-56b-base-8k"},
            "server_args": {"tp_size": 2, "pp_size": 4, "mem_fraction_static": 0.88},
            "budget": {"free_gib_before_load": 139.6, "free_gib_after_load": 110.0},
            "from_version": "0.5.16",
            "to_version": "0.5.23",
        },
    },
    "no_pipeline_parallel": {
        "summary": "PP 1: both accountings agree",
        "value": {
            "model": {"preset": "qwen3-next-80b-a3b-instruct"},
            "server_args": {"tp_size": 4},
            "budget": {"rest_gib": 30.0},
        },
    },
}


def request_body(schema_name: str, examples: dict) -> dict:
    return {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema_name}"}, "examples": examples}},
    }
