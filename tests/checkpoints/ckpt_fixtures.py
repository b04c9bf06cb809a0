"""Real-layout checkpoint folders for the tests: config.json (+ hf_quant_config.json),
model.safetensors.index.json and safetensors shards whose headers are real and whose data is
sparse (the file is truncated to its data length; no weight byte is written). Sources of the
configs: tests/data/checkpoints/SOURCES.md."""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import pathlib
import struct

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "checkpoints"
BLOCK = 128
Item = tuple[str, str, tuple[int, ...]]  # (tensor name, safetensors dtype, shape)
# dtype -> bytes per element (F4 is not used: packed formats store U8)
ITEMSIZE = {"F32": 4, "BF16": 2, "F16": 2, "I32": 4, "I64": 8, "U8": 1, "I8": 1, "F8_E4M3": 1}


def base_config() -> dict:
    return json.loads((DATA / "qwen3.8-27b.config.json").read_text())


def _gdn_ignores(text: dict) -> list[str]:
    out = []
    for i, kind in enumerate(text["layer_types"]):
        if kind == "linear_attention":
            out += [f"model.language_model.layers.{i}.linear_attn.in_proj_a", f"model.language_model.layers.{i}.linear_attn.in_proj_b"]
    return out


def quant_config(scheme: str) -> dict | None:
    text = base_config()["text_config"]
    if scheme == "fp8":
        return {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [BLOCK, BLOCK],
                "modules_to_not_convert": ["lm_head", "model.visual", "mtp.fc", *_gdn_ignores(text)]}
    if scheme == "nvfp4-ct":
        w = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True, "dynamic": False}
        a = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True, "dynamic": "local"}
        return {"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized", "quantization_status": "compressed",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": w, "input_activations": a,
                                              "format": "nvfp4-pack-quantized"}},
                "ignore": ["lm_head", "re:.*linear_attn.in_proj_a$", "re:.*linear_attn.in_proj_b$", "re:.*visual.*", "re:^mtp.*"]}
    if scheme == "int4-gptq":
        return {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": False}
    if scheme == "bf16-mtp":
        return None
    raise ValueError(scheme)


def config(scheme: str) -> dict:
    cfg = base_config()
    qc = quant_config(scheme)
    if qc is not None:
        cfg["quantization_config"] = qc
    return cfg


def _skipped(name: str, qc: dict | None) -> bool:
    """Whether the linear module `name` is stored unquantized under `qc`."""
    import re

    if qc is None:
        return True
    if qc["quant_method"] == "fp8":
        return any(name == m or name.startswith(m + ".") or f".{m}." in f".{name}." for m in qc["modules_to_not_convert"])
    if qc["quant_method"] == "compressed-tensors":
        return any(re.match(p[3:], name) if p.startswith("re:") else name == p for p in qc["ignore"])
    return name == "lm_head" or name.startswith("model.visual")  # gptq: every text linear


def _linear(name: str, out: int, inp: int, qc: dict | None) -> list[tuple[str, str, tuple[int, ...]]]:
    if _skipped(name, qc):
        return [(f"{name}.weight", "BF16", (out, inp))]
    assert qc is not None
    m = qc["quant_method"]
    if m == "fp8":
        return [(f"{name}.weight", "F8_E4M3", (out, inp)),
                (f"{name}.weight_scale_inv", "F32", (math.ceil(out / BLOCK), math.ceil(inp / BLOCK)))]
    if m == "compressed-tensors":
        return [(f"{name}.weight_packed", "U8", (out, inp // 2)), (f"{name}.weight_scale", "F8_E4M3", (out, inp // 16)),
                (f"{name}.weight_global_scale", "F32", (1,)), (f"{name}.input_global_scale", "F32", (1,))]
    g = qc["group_size"]
    return [(f"{name}.qweight", "I32", (inp // 8, out)), (f"{name}.qzeros", "I32", (inp // g, out // 8)),
            (f"{name}.scales", "F16", (inp // g, out)), (f"{name}.g_idx", "I32", (inp,))]


def _decoder_layer(p: str, kind: str, t: dict, qc: dict | None) -> list[Item]:
    H, inter = t["hidden_size"], t["intermediate_size"]
    out: list[Item] = [(f"{p}.input_layernorm.weight", "BF16", (H,)), (f"{p}.post_attention_layernorm.weight", "BF16", (H,))]
    out += _linear(f"{p}.mlp.gate_proj", inter, H, qc) + _linear(f"{p}.mlp.up_proj", inter, H, qc)
    out += _linear(f"{p}.mlp.down_proj", H, inter, qc)
    if kind == "linear_attention":
        kd, vd = t["linear_key_head_dim"], t["linear_value_head_dim"]
        kh, vh = t["linear_num_key_heads"], t["linear_num_value_heads"]
        qkv = 2 * kh * kd + vh * vd
        a = f"{p}.linear_attn"
        out += _linear(f"{a}.in_proj_qkv", qkv, H, qc) + _linear(f"{a}.in_proj_z", vh * vd, H, qc)
        out += _linear(f"{a}.in_proj_b", vh, H, qc) + _linear(f"{a}.in_proj_a", vh, H, qc)
        out += [(f"{a}.conv1d.weight", "BF16", (qkv, 1, t["linear_conv_kernel_dim"])), (f"{a}.dt_bias", "BF16", (vh,)),
                (f"{a}.A_log", "F32", (vh,)), (f"{a}.norm.weight", "F32", (vd,))]
        out += _linear(f"{a}.out_proj", H, vh * vd, qc)
    else:
        hd, nh, nkv = t["head_dim"], t["num_attention_heads"], t["num_key_value_heads"]
        a = f"{p}.self_attn"
        out += _linear(f"{a}.q_proj", nh * hd * (2 if t.get("attn_output_gate") else 1), H, qc)
        out += _linear(f"{a}.k_proj", nkv * hd, H, qc) + _linear(f"{a}.v_proj", nkv * hd, H, qc)
        out += _linear(f"{a}.o_proj", H, nh * hd, qc)
        out += [(f"{a}.q_norm.weight", "BF16", (hd,)), (f"{a}.k_norm.weight", "BF16", (hd,))]
    return out


@functools.lru_cache(maxsize=1)
def _vision(vision_json: str) -> tuple:
    """model.visual.* as transformers' Qwen3_5VisionModel names and shapes them (meta device), stored BF16."""
    import torch
    from transformers.models.qwen3_5 import configuration_qwen3_5 as c
    from transformers.models.qwen3_5 import modeling_qwen3_5 as m

    with torch.device("meta"):
        model = m.Qwen3_5VisionModel(c.Qwen3_5VisionConfig(**json.loads(vision_json)))
    return tuple((f"model.visual.{k}", "BF16", tuple(v.shape)) for k, v in model.state_dict().items())


def tensors(scheme: str) -> list[tuple[str, str, tuple[int, ...]]]:
    cfg = config(scheme)
    qc = cfg.get("quantization_config")
    t = cfg["text_config"]
    H, V = t["hidden_size"], t["vocab_size"]
    out: list[Item] = [("model.language_model.embed_tokens.weight", "BF16", (V, H)), ("model.language_model.norm.weight", "BF16", (H,))]
    for i, kind in enumerate(t["layer_types"]):
        out += _decoder_layer(f"model.language_model.layers.{i}", kind, t, qc)
    if not t.get("tie_word_embeddings"):
        out.append(("lm_head.weight", "BF16", (V, H)))
    for j in range(t.get("mtp_num_hidden_layers", 0)):
        out += _decoder_layer(f"mtp.layers.{j}", "full_attention", t, qc)
    if t.get("mtp_num_hidden_layers"):
        out += _linear("mtp.fc", H, 2 * H, qc)
        out += [("mtp.pre_fc_norm_embedding.weight", "BF16", (H,)), ("mtp.pre_fc_norm_hidden.weight", "BF16", (H,)),
                ("mtp.norm.weight", "BF16", (H,))]
    out += list(_vision(json.dumps(cfg["vision_config"], sort_keys=True)))
    return out


def nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    return math.prod(shape) * ITEMSIZE[dtype]


def write_safetensors(path: pathlib.Path, items: list[tuple[str, str, tuple[int, ...]]]) -> int:
    """A safetensors file: the real header, then the data region as a hole (sparse)."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape in items:
        n = nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        f.truncate(8 + len(raw) + offset)
    return offset


def write_checkpoint(folder: pathlib.Path, scheme: str, shards: int = 4, hf_quant_config: dict | None = None) -> pathlib.Path:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = config(scheme)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2))
    if hf_quant_config is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(hf_quant_config, indent=2))
    items = tensors(scheme)
    per = math.ceil(len(items) / shards)
    weight_map, total = {}, 0
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = items[s * per:(s + 1) * per]
        total += write_safetensors(folder / name, part)
        weight_map.update({n: name for n, _, _ in part})
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    return folder


SCHEMES = ("fp8", "nvfp4-ct", "int4-gptq", "bf16-mtp")
REPO_IDS = {"fp8": "Qwen/Qwen3.8-27B-FP8", "nvfp4-ct": "example/Qwen3.8-27B-NVFP4-CT", "int4-gptq": "example/Qwen3.8-27B-GPTQ-Int4",
            "bf16-mtp": "Qwen/Qwen3.8-27B"}


def copy_config(scheme: str) -> dict:
    return copy.deepcopy(config(scheme))


def file_bytes(folder: pathlib.Path) -> dict[str, bytes | int]:
    """Each file of a fixture folder: its bytes (JSON) or its size (safetensors: served sparse)."""
    out: dict[str, bytes | int] = {}
    for p in sorted(folder.iterdir()):
        out[p.name] = p.read_bytes() if p.suffix == ".json" else os.path.getsize(p)
    return out
