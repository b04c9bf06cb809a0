"""PlanRequest: the wire contract for one sizing question.

Field names follow SGLang 0.5.23's ServerArgs and environment variables wherever SGLang
has a name, so an operator can paste what they already pass to `sglang.launch_server`.
Every model is strict: an unknown field is rejected by name, and every number is bounded
so a request can never make the solver loop or allocate without limit.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    Tag,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from mambasizer.schemas.releases import (
    DEFAULT_RELEASE,
    SUPPORTED_RELEASES,
    VLLM_DEFAULT_RELEASE,
    VLLM_RELEASES,
)

# Bounds: generous for any real deployment, small enough that nothing explodes.
MAX_LAYERS = 4096
MAX_PARALLEL = 1024
MAX_DIM = 1 << 20
MAX_GIB = 1 << 20  # 1 PiB of GPU memory per rank is far beyond any device
MAX_TOKENS = 1 << 40
MAX_CONTEXT = 1 << 28
# SGLang launch arguments (`sglang_args`) on every route that takes them (plan, compare, sweep
# base, recommend, check-log): the largest list the schema allows (256 x 1 KiB = 256 KiB)
# leaves room for the rest of any body under the 1 MiB body limit (a launch line has < 100).
MAX_SGLANG_ARGS = 256
MAX_SGLANG_ARG_CHARS = 1024
# A config.json's quantization ignore lists (ignored_layers, modules_to_not_convert, ignore,
# exclude_modules): each entry is matched against every module of the model, so each list is
# bounded (checked where the quantization_config is read: service/solver/weights/quant/).
MAX_IGNORE_ENTRIES = 4096
MAX_IGNORE_ENTRY_CHARS = 200
IGNORE_LIST_KEYS = ("ignored_layers", "modules_to_not_convert", "ignore", "exclude_modules")
MAX_VLLM_ARGS = 64
MAX_VLLM_ARG_CHARS = 256
MAX_PP_FIGURES = 64



def _json_integer(v: Any) -> Any:
    """A JSON number with no fractional part, on every integer field of every request (one
    rule). JSON has one number type and JSON Schema's "integer" (what the OpenAPI document
    says, and what schemathesis generates from it) includes `4.0`, so that is the integer 4;
    but `"4"` and `true` are not numbers, and `4.5` is no integer."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise PydanticCustomError("int_type", "Input should be a valid integer (a JSON number, not a string or boolean)")
    if isinstance(v, float):
        if not v.is_integer():
            raise PydanticCustomError("int_from_float", "Input should be a valid integer, got a number with a fractional part")
        return int(v)
    return v


# Numbers and booleans are strict: `"4"` and `true` are not a tp_size, `"0.8"` is not a
# fraction and `"yes"` not a flag (pydantic's lax mode takes them all). Floats still take
# JSON integers (`"rest_gib": 40`), and integers take integral numbers (`4.0`). Every integer field of every request model is StrictInt
# (tests/schemas/test_integer_contract.py walks the models to hold that).
StrictInt = Annotated[int, BeforeValidator(_json_integer)]
PosInt = Annotated[StrictInt, Field(ge=1, le=MAX_DIM)]
LayerId = Annotated[StrictInt, Field(ge=0, lt=MAX_LAYERS)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


# --------------------------------------------------------------------------- model


class HFConfigModel(Strict):
    """A model's Hugging Face `config.json`, as a JSON object."""

    hf_config: dict[str, Any] = Field(
        description="The checkpoint's config.json. Free-form, with one bound JSON Schema cannot place: each "
        "quantization ignore list of its quantization_config (and of an hf_quant_config's `quantization`), "
        f"{', '.join(IGNORE_LIST_KEYS)}, holds at most {MAX_IGNORE_ENTRIES} strings of at most "
        f"{MAX_IGNORE_ENTRY_CHARS} characters; a `re:` entry or a `*` glob must be a pattern SGLang's re accepts "
        "and RE2 can match in linear time (no backreferences or lookaround). Otherwise 422 naming the entry.",
        json_schema_extra={"x-ignore-lists": {"keys": list(IGNORE_LIST_KEYS), "maxItems": MAX_IGNORE_ENTRIES,
                                              "maxLength": MAX_IGNORE_ENTRY_CHARS}},
    )


class PresetModel(Strict):
    """A shipped model: `GET /v1/presets` lists the names."""

    preset: Annotated[str, Field(min_length=1, max_length=128)]
    allow_unverified: StrictBool = Field(
        False,
        description="Accepted for compatibility; no effect: every preset SGLang 0.5.23 can load "
        "is sized, verified or not (GET /v1/presets reports `verified`).",
    )


class StateShapes(Strict):
    """Per-TP-rank state tensor shapes, exactly as SGLang's MambaPool allocates them
    (one row of each per request slot and per layer)."""

    conv_shapes: Annotated[
        list[tuple[Annotated[StrictInt, Field(ge=0, le=MAX_DIM)], Annotated[StrictInt, Field(ge=0, le=MAX_DIM)]]],
        Field(min_length=1, max_length=8),
    ]
    temporal_shape: tuple[
        Annotated[StrictInt, Field(ge=0, le=MAX_DIM)],
        Annotated[StrictInt, Field(ge=0, le=MAX_DIM)],
        Annotated[StrictInt, Field(ge=0, le=MAX_DIM)],
    ]
    num_k_heads_per_tp: Annotated[StrictInt, Field(ge=1, le=MAX_DIM)] | None = Field(
        None, description="K heads per rank (ReplaySSM ring only); defaults to 1 as in SGLang."
    )


class MHAKV(Strict):
    type: Literal["mha"]
    num_kv_heads: PosInt = Field(description="Total KV heads, as in a model config; SGLang shards them over attention TP.")
    head_dim: PosInt
    v_head_dim: PosInt | None = None


class MLAKV(Strict):
    type: Literal["mla"]
    kv_lora_rank: PosInt
    qk_rope_head_dim: Annotated[StrictInt, Field(ge=0, le=MAX_DIM)]


# The architectures an explicit layout may be resolved as (SGLang 0.5.23's launch rules differ
# by architecture: radix-cache strategy, PP support, chunk size), each with the linear mixer
# it has, and the default for each mixer. Text architectures only: a multimodal wrapper's
# resolution reads its vision config, which a layout does not carry (send its config.json).
LAYOUT_ARCHITECTURES: dict[str, str] = {
    "NemotronHForCausalLM": "mamba2",
    "FalconH1ForCausalLM": "mamba2",
    "GraniteMoeHybridForCausalLM": "mamba2",
    "Lfm2ForCausalLM": "mamba2",
    "Lfm2MoeForCausalLM": "mamba2",
    "Qwen3NextForCausalLM": "gdn",
    "Qwen3_5ForCausalLM": "gdn",
    "Qwen3_5MoeForCausalLM": "gdn",
    "KimiLinearForCausalLM": "kda",
}
# The configs whose mamba_ssm_dtype SGLang's mamba2_state_dtype(config) reads (KimiLinear,
# GraniteMoeHybrid and LFM2-MoE never pass their config to it).
CONFIG_SSM_DTYPE_ARCHITECTURES = frozenset({
    "NemotronHForCausalLM", "FalconH1ForCausalLM", "Lfm2ForCausalLM",
    "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
})
DEFAULT_LAYOUT_ARCHITECTURE = {"mamba2": "NemotronHForCausalLM", "gdn": "Qwen3NextForCausalLM", "kda": "KimiLinearForCausalLM"}
LayoutArchitecture = Literal[
    "NemotronHForCausalLM", "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "Lfm2ForCausalLM",
    "Lfm2MoeForCausalLM", "Qwen3NextForCausalLM", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM",
    "KimiLinearForCausalLM",
]
assert set(get_args(LayoutArchitecture)) == set(LAYOUT_ARCHITECTURES)  # one list, two spellings


class Layout(Strict):
    """An explicit layout, for a model that has no config.json yet. It is resolved as the
    SGLang architecture `architecture` (default by `linear_kind`)."""

    num_hidden_layers: Annotated[StrictInt, Field(ge=1, le=MAX_LAYERS)]
    mamba_layer_ids: Annotated[list[LayerId], Field(max_length=MAX_LAYERS)]
    full_attention_layer_ids: Annotated[list[LayerId], Field(max_length=MAX_LAYERS)]
    state: StateShapes
    kv: Annotated[MHAKV | MLAKV, Field(discriminator="type")]
    context_length: Annotated[StrictInt, Field(ge=1, le=MAX_CONTEXT)]
    dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    linear_kind: Literal["mamba2", "gdn", "kda"] = Field(
        "mamba2", description="Which linear mixer: decides ReplaySSM support and ring layout."
    )
    architecture: LayoutArchitecture | None = Field(
        None,
        description="The SGLang model class to resolve the launch flags as (radix-cache strategy, "
        "PP support, mamba chunk size), one whose mixer is `linear_kind`. Default by `linear_kind`: "
        "mamba2 -> NemotronHForCausalLM, gdn -> Qwen3NextForCausalLM, kda -> KimiLinearForCausalLM.",
    )
    mamba_ssm_dtype: Literal["float32", "bfloat16", "float16"] | None = Field(
        None,
        description="The config's own mamba_ssm_dtype (lowest priority). Refused for the architectures "
        "whose config SGLang does not read it from (KimiLinear, GraniteMoeHybrid, Lfm2Moe).",
    )
    mamba_chunk_size: Annotated[StrictInt, Field(ge=1, le=MAX_DIM)] | None = Field(
        None,
        description="The config's mamba_chunk_size (SGLang checks it against the page size with the "
        "extra_buffer strategy); default: the architecture's (256 for NemotronH, FalconH1, GraniteMoeHybrid; else 64).",
    )
    num_nextn_predict_layers: Annotated[StrictInt, Field(ge=0, le=64)] = 0
    is_multimodal: StrictBool = False

    @field_validator("architecture")
    @classmethod
    def _architecture_has_this_mixer(cls, v: str | None, info: ValidationInfo) -> str | None:
        kind = info.data.get("linear_kind")
        if v is not None and kind is not None and LAYOUT_ARCHITECTURES[v] != kind:
            fits = [a for a, k in LAYOUT_ARCHITECTURES.items() if k == kind]
            raise ValueError(f"{v} has {LAYOUT_ARCHITECTURES[v]} layers, not linear_kind={kind!r}; for {kind} use one of {', '.join(fits)}")
        return v

    @field_validator("mamba_ssm_dtype")
    @classmethod
    def _ssm_dtype_read_by_the_architecture(cls, v: str | None, info: ValidationInfo) -> str | None:
        arch = info.data.get("architecture") or DEFAULT_LAYOUT_ARCHITECTURE.get(info.data.get("linear_kind", ""))
        if v is not None and arch is not None and arch not in CONFIG_SSM_DTYPE_ARCHITECTURES:
            raise ValueError(
                f"{arch} does not read mamba_ssm_dtype from its config in SGLang 0.5.23; "
                "set server_args.mamba_ssm_dtype (or env.SGLANG_MAMBA_SSM_DTYPE) instead"
            )
        return v

    @property
    def resolved_architecture(self) -> str:
        return self.architecture or DEFAULT_LAYOUT_ARCHITECTURE[self.linear_kind]

    @model_validator(mode="after")
    def _layers_in_range(self) -> Layout:
        for name in ("mamba_layer_ids", "full_attention_layer_ids"):
            ids = getattr(self, name)
            bad = [i for i in ids if i >= self.num_hidden_layers]
            if bad:
                raise ValueError(
                    f"{name} has ids {bad[:5]} outside [0, num_hidden_layers={self.num_hidden_layers})"
                )
            if len(set(ids)) != len(ids):
                raise ValueError(f"{name} lists a layer id more than once")
        if not self.mamba_layer_ids:
            raise ValueError("mamba_layer_ids is empty: a layout without mamba layers is not sized by the hybrid path")
        return self


class LayoutModel(Strict):
    layout: Layout


def _model_form(v: Any) -> str | None:
    if isinstance(v, BaseModel):
        return {HFConfigModel: "hf_config", PresetModel: "preset", LayoutModel: "layout"}.get(type(v))
    if isinstance(v, dict):
        forms = [k for k in ("hf_config", "preset", "layout") if k in v]
        return forms[0] if len(forms) == 1 else None
    return None


ModelSpec = Annotated[
    Annotated[HFConfigModel, Tag("hf_config")] | Annotated[PresetModel, Tag("preset")] | Annotated[LayoutModel, Tag("layout")],
    Discriminator(
        _model_form,
        custom_error_type="model_form",
        custom_error_message="model must have exactly one of 'hf_config', 'preset' or 'layout'",
    ),
]


# --------------------------------------------------------------------------- server args

# DFLASH / DSPARK: 0.5.23 (service/solver/dflash.py); earlier releases refuse them by name.
SpecAlgorithm = Literal["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK"]
# The KV dtypes of SGLang 0.5.23's --kv-cache-dtype. mxfp8 (Blackwell) is sized with its UE8M0
# block scales; the FP4 recipes are refused with SGLang's reason where it refuses them, and as
# not modelled where it starts (their cell depends on the attention backends' workspaces).
KVCacheDType = Literal["auto", "bfloat16", "bf16", "fp8_e4m3", "fp8_e5m2", "mxfp8", "nvfp4", "fp4_mx_block16"]
# SGLang 0.5.23's LINEAR_ATTN_KERNEL_BACKEND_CHOICES (arg_groups/choices.py); verify adds nv_cutedsl.
LinearAttnBackend = Literal["triton", "cutedsl", "flashinfer", "flashkda", "nvidia_kda", "ptx_kda", "helion", "intel_xpu"]
LinearAttnVerifyBackend = Literal["triton", "cutedsl", "flashinfer", "flashkda", "nvidia_kda", "ptx_kda", "helion", "intel_xpu", "nv_cutedsl"]


class ServerArgs(Strict):
    """SGLang 0.5.23 launch arguments that change sizing. `None` means "not passed":
    SGLang's own resolution picks the value, and so do we."""

    tp_size: Annotated[StrictInt, Field(ge=1, le=MAX_PARALLEL)] = 1
    pp_size: Annotated[StrictInt, Field(ge=1, le=MAX_PARALLEL)] = 1
    attn_dp_size: Annotated[StrictInt, Field(ge=1, le=MAX_PARALLEL)] = Field(
        1, description="Attention data-parallel size (`--dp-size` with `--enable-dp-attention`)."
    )
    ep_size: Annotated[StrictInt, Field(ge=1, le=MAX_PARALLEL)] = Field(
        1, description="Expert-parallel size (`--ep-size`): how MoE experts shard; only the estimated budget's weights read it."
    )
    page_size: Annotated[StrictInt, Field(ge=1, le=1 << 16)] | None = None
    kv_cache_dtype: KVCacheDType = "auto"
    mamba_ssm_dtype: Literal["float32", "bfloat16", "float16"] | None = None
    mamba_full_memory_ratio: Annotated[StrictFloat, Field(gt=0, le=1000000.0)] | None = None
    max_mamba_cache_size: Annotated[StrictInt, Field(ge=0, le=MAX_TOKENS)] | None = None
    max_running_requests: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)] | None = None
    max_total_tokens: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)] | None = None
    disable_radix_cache: StrictBool = False
    mamba_radix_cache_strategy: Literal["auto", "no_buffer", "extra_buffer", "extra_buffer_lazy"] = "auto"
    disable_overlap_schedule: StrictBool = False
    speculative_algorithm: SpecAlgorithm | None = None
    speculative_num_draft_tokens: Annotated[StrictInt, Field(ge=1, le=1024)] | None = None
    speculative_num_steps: Annotated[StrictInt, Field(ge=1, le=1024)] | None = None
    speculative_eagle_topk: Annotated[StrictInt, Field(ge=1, le=1024)] | None = None
    # DFLASH's block size / DSPARK's gamma; a non-positive value is SGLang's own ValueError.
    speculative_dflash_block_size: Annotated[StrictInt, Field(ge=-1024, le=1024)] | None = None
    speculative_dspark_block_size: Annotated[StrictInt, Field(ge=-1024, le=1024)] | None = None
    enable_linear_replayssm_spec: StrictBool = False
    linear_replayssm_cache_len: Annotated[StrictInt, Field(ge=1, le=1 << 16)] = 16
    context_length: Annotated[StrictInt, Field(ge=1, le=MAX_CONTEXT)] | None = None
    mem_fraction_static: Annotated[StrictFloat, Field(gt=0, lt=1)] | None = None
    pp_max_micro_batch_size: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)] | None = None
    chunked_prefill_size: StrictInt | None = Field(None, ge=-1, le=MAX_TOKENS)
    max_prefill_tokens: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)] = 16384
    cuda_graph_max_bs_decode: Annotated[StrictInt, Field(ge=1, le=1 << 16)] | None = None
    cuda_graph_max_bs_prefill: Annotated[StrictInt, Field(ge=1, le=MAX_TOKENS)] | None = None
    disable_cuda_graph: StrictBool = False
    disable_prefill_cuda_graph: StrictBool = False
    disable_decode_cuda_graph: StrictBool = False
    attention_backend: Literal["fa3", "flashinfer", "triton"] | None = Field(
        None, description="Only the backends that leave the page size alone may be named; unset means the default SGLang picks for the model on the GPU (fa3 on Hopper; trtllm_mha/trtllm_mla on Blackwell and aiter on AMD for some families; `resolved.attention_backend` says which)."
    )
    mamba_track_interval: Annotated[StrictInt, Field(ge=1, le=1 << 20)] = 256
    enable_linear_replayssm: StrictBool = Field(
        False, description="ReplaySSM decode ring: allocated but not budgeted by SGLang; only its launch checks are modelled."
    )
    # Disaggregated serving, decode context parallelism and wide EP (service/solver/
    # disaggregation.py, dcp.py, wide_ep.py hold the rules).
    disaggregation_mode: Literal["null", "prefill", "decode"] = Field(
        "null", description="PD disaggregation role (`--disaggregation-mode`): `null` is aggregated serving."
    )
    disaggregation_decode_enable_radix_cache: StrictBool = Field(
        False, description="Decode role only: keep the radix cache (SGLang disables it on decode nodes by default)."
    )
    disaggregation_decode_extra_slots: Annotated[StrictInt, Field(ge=0, le=MAX_TOKENS)] | None = Field(
        None, description="Decode role only: request rows reserved for in-transfer requests; unset is SGLang's default "
        "(2 x max_running_requests per DP rank when that is <= 32, else 0)."
    )
    dcp_size: Annotated[StrictInt, Field(ge=1, le=MAX_PARALLEL)] = Field(
        1, description="Decode context parallelism (`--dcp-size`): KV heads shard over attn_tp // dcp_size, tokens over dcp_size."
    )
    moe_a2a_backend: Literal["none", "deepep"] = Field(
        "none", description="MoE all-to-all backend (`--moe-a2a-backend`); deepep reserves 2 GiB (decode graph) and sets ep_size = tp_size."
    )
    enable_two_batch_overlap: StrictBool = Field(False, description="`--enable-two-batch-overlap`: turns the breakable prefill graph off.")
    enable_hierarchical_cache: StrictBool = Field(
        False, description="HiCache: its host pools are sized after the device pools; no effect on the GPU split."
    )
    enable_symm_mem: StrictBool = Field(
        False, description="Symmetric memory: a 4 GiB pool (SGLANG_SYMM_MEM_PREALLOC_GB_SIZE) allocated after sizing, out of the slack."
    )
    num_reserved_decode_tokens: Annotated[StrictInt, Field(ge=0, le=MAX_TOKENS)] = Field(
        512, description="Decode admission headroom (runtime only): no effect on the start-up split."
    )
    # The int8 mamba checkpoint pool (service/solver/int8_checkpoint.py).
    enable_int8_mamba_checkpoint: StrictBool = Field(
        False, description="`--enable-int8-mamba-checkpoint`: an int8 pool of cached mamba states (int8_mamba_ckpt_size, "
        "default 2 x max_mamba_cache_size, plus one padding slot) allocated after the split, before the KV pool, out of the "
        "memory mem_fraction_static leaves: the KV tokens do not change, the slack shrinks (`slack_consumers`).",
    )
    int8_mamba_ckpt_size: Annotated[StrictInt, Field(ge=0, le=MAX_TOKENS)] | None = Field(
        None, description="`--int8-mamba-ckpt-size`: int8 checkpoint slots; unset or 0 is 2 x max_mamba_cache_size."
    )
    mamba_max_states_per_path: Annotated[StrictInt, Field(ge=-MAX_TOKENS, le=MAX_TOKENS)] = Field(
        -1, description="`--mamba-max-states-per-path`: -1 (unlimited) or a positive cap on cached states per radix path "
        "(runtime only); 0 and values below -1 SGLang refuses at launch.",
    )
    # Linear-attention kernels (`handle_linear_attn_backend`): only `triton` as the base
    # backend keeps the extra_buffer strategy (`supports_mamba_cache_extra_buffer`).
    linear_attn_backend: LinearAttnBackend = Field(
        "triton", description="`--linear-attn-backend`: any other base backend than triton resolves the radix strategy "
        "`auto` to no_buffer with overlap off, and refuses an explicit extra_buffer.",
    )
    linear_attn_decode_backend: LinearAttnBackend | None = Field(
        None, description="`--linear-attn-decode-backend` (unset: the base backend; FlashInfer on SM100 with a bf16 SSM state)."
    )
    linear_attn_prefill_backend: LinearAttnBackend | None = Field(None, description="`--linear-attn-prefill-backend` (unset: the base backend).")
    linear_attn_verify_backend: LinearAttnVerifyBackend | None = Field(
        None, description="`--linear-attn-verify-backend` (unset: flashinfer after a flashinfer decode backend, else triton)."
    )
    enable_deterministic_inference: StrictBool = Field(
        False, description="`--enable-deterministic-inference`: an unset attention backend becomes fa3 (Hopper) or flashinfer "
        "(SM100/SM120); a backend other than fa3/fa4/triton turns the radix cache off.",
    )

    @field_validator("mem_fraction_static", "mamba_full_memory_ratio")
    @classmethod
    def _finite(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise ValueError("must be a finite number")
        return v


class DraftModel(Strict):
    """The draft model whose KV layers the target prices under EAGLE-family / STANDALONE
    speculative decoding. Without it, SGLang reads `num_nextn_predict_layers` from the
    target config (MTP)."""

    num_layers: Annotated[StrictInt, Field(ge=0, le=MAX_LAYERS)]
    hf_config: dict[str, Any] | None = Field(
        None,
        description="The draft checkpoint's config.json (what --speculative-draft-model-path reads). With it, a budget "
        "estimated from the GPU alone also holds the draft's weights on every rank, as SGLang loads them before the "
        "pools are sized (service/solver/weights/draft.py); a measured budget already holds them.",
    )
    # DFLASH / DSPARK (0.5.23) read the draft's own config: its attention geometry prices the
    # draft KV cell (`dflash_draft_cell_size_per_token`), its block size is the draft-token
    # count when no flag gives one. --speculative-draft-model-path fills them from config.json.
    num_kv_heads: Annotated[StrictInt, Field(ge=1, le=1 << 16)] | None = None
    head_dim: Annotated[StrictInt, Field(ge=1, le=1 << 16)] | None = None
    dtype: Literal["bfloat16", "float16", "float32"] | None = None
    block_size: Annotated[StrictInt, Field(ge=1, le=1024)] | None = None  # dflash_config.block_size
    dspark_block_size: Annotated[StrictInt, Field(ge=1, le=1024)] | None = None  # top-level dspark_block_size


_ENV_TRUE, _ENV_FALSE = ("true", "1", "yes", "y"), ("false", "0", "no", "n")


def _env_bool(v: Any) -> bool:
    """SGLang's EnvBool.parse: environment variables are strings; `true/1/yes/y` and
    `false/0/no/n` in any case (JSON booleans and 0/1 are taken too). Anything else SGLang
    warns about and replaces by the default: refused here, so a typo is not silently off."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str):
        s = v.lower()  # EnvBool.parse lowers and compares: no strip (" 1" is not a boolean to SGLang)
        if s in _ENV_TRUE:
            return True
        if s in _ENV_FALSE:
            return False
    raise PydanticCustomError(
        "env_bool",
        "must be a boolean as SGLang's EnvBool reads it: true/1/yes/y or false/0/no/n (any case); "
        "SGLang 0.5.23 ignores any other value with a warning and keeps the default (false)",
    )


EnvBoolValue = Annotated[bool, BeforeValidator(_env_bool), WithJsonSchema({"anyOf": [{"type": "boolean"}, {"type": "string", "maxLength": 8}, {"type": "integer", "enum": [0, 1]}]})]


class Env(Strict):
    SGLANG_PP_LAYER_PARTITION: Annotated[str, Field(max_length=8192)] | None = None
    SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK: EnvBoolValue = False
    SGLANG_MAMBA_SSM_DTYPE: Literal["float32", "bfloat16", "float16"] | None = None
    SGLANG_MAMBA_CONV_DTYPE: Literal["float32", "bfloat16", "float16"] | None = None
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: EnvBoolValue = False
    # Legacy spelling of --mm-feature-transport cuda_ipc (true) / cpu (false): on a multimodal
    # model cuda_ipc reserves the 1 GiB feature-transport pool out of the KV budget.
    SGLANG_USE_CUDA_IPC_TRANSPORT: EnvBoolValue | None = None
    # ROCm (AMD) only: aiter's workspace factor on an explicit mem_fraction_static, and the
    # KV layout whose `vectorized_5d` value makes the default page 64 (ignored off HIP, as SGLang does).
    SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION: EnvBoolValue = False
    SGLANG_AITER_KV_CACHE_LAYOUT: Annotated[str, Field(max_length=32, pattern=r"^[A-Za-z0-9_]*$")] = Field(
        "nhd", description="SGLang's EnvStr (default `nhd`); only `vectorized_5d` (any case) changes sizing: page 64 on HIP."
    )


# --------------------------------------------------------------------------- budget

Gib = Annotated[StrictFloat, Field(ge=0, le=MAX_GIB, allow_inf_nan=False)]


class DeviceDescription(Strict):
    """A GPU described by what SGLang's probes read on it, for a part the catalog does not
    name (or to state a catalog part's probes yourself). Every field is needed: a missing one
    is a 422 on `budget.gpu` listing what is missing."""

    product: Annotated[str, Field(min_length=1, max_length=128)] | None = Field(
        None, description="torch.cuda.get_device_name() (what nvidia-smi / rocminfo print), e.g. `NVIDIA GB10`.")
    memory_mib: Annotated[StrictInt, Field(ge=1, le=1 << 30)] | None = Field(
        None, description="What SGLang's capacity probe reads (MiB): nvidia-smi memory.total, or the total SGLang logs as "
        "`Reported total GPU memory per device (MiB)` where nvidia-smi prints [N/A]; rocminfo Pool 1 Size KB / 1024 on ROCm.")
    compute_capability: Annotated[str, Field(min_length=3, max_length=16, pattern=r"^(\d{1,2}\.\d|gfx[0-9a-f]{3,4})$")] | None = Field(
        None, description="torch.cuda.get_device_capability() as `12.1`; on ROCm the gfx arch (`gfx942`, props.gcnArchName) or its `9.4`.")
    runtime: Literal["cuda", "hip"] | None = Field(None, description="`cuda` (torch.version.cuda) or `hip` (torch.version.hip set).")
    integrated: StrictBool | None = Field(
        None, description="torch.cuda.get_device_properties().is_integrated: a unified-memory part (GB10, MI300A, Strix Halo), "
        "where SGLang reads free memory from the host (psutil).")


class Budget(Strict):
    """Memory per GPU, in one of these forms:

    * `{"gpu": "h200"}` (a `GET /v1/gpus` name) or `{"gpu_memory_mib": N}` alone: nothing
      measured; mambasizer estimates what SGLang's probes would return on that GPU (the
      weights per stage exactly, the CUDA/NCCL residents from calibrated constants, or
      `reserved_gib`) and runs the same pipeline on it (`budget_source: "estimated"`);
    * `{"rest_gib"}`: the GiB SGLang hands to `_handle_max_mamba_cache` (after slack);
    * `{"free_gib_before_load", "free_gib_after_load"}` with `server_args.mem_fraction_static`:
      SGLang's profiler path, figures as its probe returns them (GiB, min over ranks);
    * the same plus `gpu_memory_mib` when `mem_fraction_static` is left to SGLang's
      automatic rule.

    `gpu` names the device in every form: it fixes which SGLang resolution applies (the
    attention backend and page size per architecture, the HIP rules; the same MiB can be an
    H20 or an RTX PRO 6000) and, unless `gpu_memory_mib` is given, the capacity. A part whose
    capacity no public source confirms (`confirmed: false` in `GET /v1/gpus`) needs
    `gpu_memory_mib` beside it. Without `gpu` the device is a Hopper part (H200's rules).
    """

    gpu: Annotated[str, Field(min_length=1, max_length=64)] | DeviceDescription | None = Field(
        None, description="The GPU by catalog name (`GET /v1/gpus`), or described by its probes (product, memory_mib, "
        "compute_capability, runtime, integrated), in any budget form: its resolution rules (compute capability, CUDA or "
        "HIP) and, without gpu_memory_mib, its capacity. Unset: a Hopper part.",
    )
    host_available_mib: Annotated[StrictInt, Field(ge=1, le=1 << 30)] | None = Field(
        None, description="Integrated (unified-memory) GPUs only, estimated form: the host's available memory in MiB "
        "(psutil.virtual_memory().available, `MemAvailable` in /proc/meminfo) before SGLang starts. SGLang reads free memory "
        "from it on such a part, not from a GPU capacity; without it the plan assumes the whole capacity is available and says so.",
    )
    rest_gib: Annotated[StrictFloat, Field(ge=-MAX_GIB, le=MAX_GIB, allow_inf_nan=False)] | None = None
    free_gib_before_load: Gib | None = None
    free_gib_after_load: Gib | None = None
    gpu_memory_mib: Annotated[StrictInt, Field(ge=1, le=1 << 30)] | None = None
    reserved_gib: Gib | None = Field(
        None, description="With `gpu` / `gpu_memory_mib` alone: GiB resident before the weights load "
        "(CUDA context, cuBLAS, NCCL, custom all-reduce), replacing the calibrated estimate.",
    )
    kv_cache_memory_gib: Annotated[Gib | Annotated[list[Gib], Field(min_length=1, max_length=MAX_PP_FIGURES)], Field(union_mode="left_to_right")] | None = Field(
        None, description="engine \"vllm\" only: the \"Available KV cache memory: X GiB\" vLLM logs per worker (the measured form); "
        "a list gives one figure per PP stage when they differ (the minimum over a stage's TP ranks).",
    )

    @property
    def estimated(self) -> bool:
        """The GPU-only form: nothing measured, the budget is estimated."""
        return (
            self.rest_gib is None and self.free_gib_before_load is None and self.free_gib_after_load is None
            and self.kv_cache_memory_gib is None
        )

    @field_validator("free_gib_after_load")
    @classmethod
    def _after_not_above_before(cls, v: float | None, info: ValidationInfo) -> float | None:
        # Loading weights cannot free memory: a larger "after" is two swapped figures, and
        # SGLang's profiler would size the KV cache from memory that never existed.
        before = info.data.get("free_gib_before_load")
        if v is not None and before is not None and v > before:
            raise ValueError(
                f"is {v} GiB, above free_gib_before_load={before} GiB: the free memory after loading "
                "the weights cannot exceed the free memory before (are the two figures swapped?)"
            )
        return v

    @model_validator(mode="after")
    def _one_form(self) -> Budget:
        profiled = self.free_gib_before_load is not None or self.free_gib_after_load is not None
        if self.kv_cache_memory_gib is not None:
            if profiled or self.rest_gib is not None or self.reserved_gib is not None:
                raise ValueError(
                    "kv_cache_memory_gib is vLLM's measured form: give it alone (gpu may name the device), "
                    "not with rest_gib, free_gib_* or reserved_gib (SGLang's forms)"
                )
            return self
        if self.rest_gib is not None and (profiled or self.gpu_memory_mib is not None):
            raise ValueError(
                "give either rest_gib, or free_gib_before_load + free_gib_after_load "
                "(+ gpu_memory_mib), or gpu / gpu_memory_mib alone, not two forms (gpu may name the device in any of them)"
            )
        if self.estimated:
            if self.gpu is None and self.gpu_memory_mib is None:
                raise ValueError(
                    'needs gpu (e.g. {"gpu": "h200"}), gpu_memory_mib alone, rest_gib, or both '
                    "free_gib_before_load and free_gib_after_load"
                )
            return self
        if self.reserved_gib is not None:
            raise ValueError("reserved_gib only applies to the estimated form (gpu or gpu_memory_mib alone)")
        if self.host_available_mib is not None:
            raise ValueError("host_available_mib only applies to the estimated form (gpu alone): a measured budget already is what SGLang read")
        if self.rest_gib is None:
            if self.free_gib_before_load is None or self.free_gib_after_load is None:
                raise ValueError(
                    "needs rest_gib, or both free_gib_before_load and free_gib_after_load"
                )
            if self.free_gib_before_load <= 0:
                raise ValueError("free_gib_before_load must be > 0")
        return self


Accounting = Literal["sglang-0.5.23", "whole-model"]
# The SGLang releases sized (service/solver/releases/registry.py); an enum so the OpenAPI lists them.
SglangVersion = Literal[SUPPORTED_RELEASES]  # type: ignore[valid-type]
VllmVersion = Literal[VLLM_RELEASES]  # type: ignore[valid-type]
Engine = Literal["sglang", "vllm"]


class PlanRequest(Strict):
    model: ModelSpec
    server_args: ServerArgs = ServerArgs()
    env: Env = Env()
    budget: Budget
    draft_model: DraftModel | None = None
    accounting: Accounting = "sglang-0.5.23"
    sglang_version: SglangVersion = Field(
        default=DEFAULT_RELEASE,
        description="The SGLang release whose start-up rules are applied (one release or post-release "
        "from 0.5.8 on; post-releases size as their base). Default 0.5.23.",
    )
    engine: Engine = Field(
        default="sglang",
        description="The serving engine whose start-up sizing is reproduced: \"sglang\" (default) or \"vllm\" "
        "(vLLM's one block pool; flags in `vllm_args`, the measured figure in `budget.kv_cache_memory_gib`).",
    )
    vllm_version: VllmVersion = Field(
        default=VLLM_DEFAULT_RELEASE,
        description="engine \"vllm\": the vLLM release whose start-up rules are applied (0.20.0 to 0.34.0; "
        "post-releases size as their base). Default 0.34.0.",
    )
    # A vllm serve line has < 60 entries; bounded so the largest valid body stays under the body limit.
    vllm_args: Annotated[list[Annotated[str, Field(max_length=MAX_VLLM_ARG_CHARS)]], Field(max_length=MAX_VLLM_ARGS)] | None = Field(
        default=None,
        description="engine \"vllm\": the `vllm serve` flags as typed, e.g. [\"--max-model-len\", \"131072\", \"-tp\", \"2\"]. "
        "Flags that do not move the KV-cache pool are accepted and ignored; one that moves it and is not modelled is refused by name.",
    )
