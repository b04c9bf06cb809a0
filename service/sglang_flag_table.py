"""THE flag table: every launch flag SGLang 0.5.23's parser knows (its dests, read off
`ServerArgs.add_cli_args` into sglang_flags_0_5_23.json), with one verdict each:

* `modelled`: it becomes a `server_args` field (or is read for its meaning: `--model-path`,
  `--speculative-draft-model-path`, `--dp-size`, ...);
* `no_effect`: accepted and listed in `ignored_sglang_args`: it cannot change the start-up
  split or SGLang's launch checks (the reason says why);
* `refused`: it moves memory, or changes resolution, in a way mambasizer does not model:
  a value other than SGLang's default is a PlanInputError naming the reason.

    verdict("disable_cuda_graph_padding")  -> FlagRow(dest, "no_effect", reason)
    flag_table()                           -> {dest: FlagRow} for every 0.5.23 dest

tests/solver/test_flag_table.py checks that the table has exactly one row per dest of the
parser and runs every row's verdict through `parse_sglang_args`. The groups below are data;
a reclassified row cites where SGLang reads the flag.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Literal, NamedTuple

FLAGS_FILE = Path(__file__).with_name("sglang_flags_0_5_23.json")

Verdict = Literal["modelled", "no_effect", "refused"]


class FlagRow(NamedTuple):
    dest: str
    verdict: Verdict
    reason: str


# --------------------------------------------------------------------------- modelled
MODELLED = {
    "a server_args field: the resolution and sizing read it (service/solver/)": """
        tp_size pp_size attn_dp_size ep_size page_size kv_cache_dtype mamba_ssm_dtype mamba_full_memory_ratio
        max_mamba_cache_size max_running_requests max_total_tokens disable_radix_cache mamba_radix_cache_strategy
        disable_overlap_schedule speculative_algorithm speculative_num_draft_tokens speculative_num_steps
        speculative_eagle_topk enable_linear_replayssm_spec linear_replayssm_cache_len enable_linear_replayssm
        context_length mem_fraction_static pp_max_micro_batch_size chunked_prefill_size max_prefill_tokens
        cuda_graph_max_bs_decode cuda_graph_max_bs_prefill disable_cuda_graph disable_prefill_cuda_graph
        disable_decode_cuda_graph attention_backend mamba_track_interval disaggregation_mode
        disaggregation_decode_enable_radix_cache disaggregation_decode_extra_slots dcp_size moe_a2a_backend
        enable_two_batch_overlap enable_hierarchical_cache enable_symm_mem num_reserved_decode_tokens
        enable_int8_mamba_checkpoint int8_mamba_ckpt_size mamba_max_states_per_path linear_attn_backend
        linear_attn_decode_backend linear_attn_prefill_backend linear_attn_verify_backend
        enable_deterministic_inference
    """,
    "DFLASH's block size / DSPARK's gamma: the draft-token count D (`speculative_hook._handle_dflash` / "
    "`_handle_dspark`), which sizes the mamba intermediate `per_req x (reqs + 1) x D` (service/solver/dflash.py); "
    "SGLang ignores them under other algorithms": "speculative_dflash_block_size speculative_dspark_block_size",
    "read for its meaning: --dp-size with --enable-dp-attention is attention DP, alone it is replicas": "dp_size enable_dp_attention",
    "the checkpoint the plan reads (service/checkpoints/); --device: CUDA only, other devices refused": """
        model_path revision served_model_name speculative_draft_model_path device
    """,
}

# --------------------------------------------------------------------------- no effect
NO_EFFECT = {
    # The groups of the original ignore list: nothing the split or the launch checks read.
    "networking, serving, tokenizer, chat templates, parsers, logging, metrics and tracing: the HTTP/tokenizer "
    "processes, not the GPU pools": """
        tokenizer_path tokenizer_mode tokenizer_backend tokenizer_worker_num detokenizer_worker_num skip_tokenizer_init
        max_queued_requests nccl_port dist_timeout dist_init_addr gated_launch_port nnodes node_rank load_balance_method
        enable_p2p_check base_gpu_id gpu_id_step random_seed watchdog_timeout soft_watchdog_timeout sleep_on_idle use_ray
        numa_node gc_threshold host port fastapi_root_path smg_grpc_mode grpc_mode grpc_port sidecar sidecar_args
        skip_server_warmup warmups enable_http2 http2_max_concurrent_streams http2_initial_connection_window_size
        ssl_keyfile ssl_certfile ssl_ca_certs ssl_keyfile_password enable_ssl_refresh api_key admin_api_key weight_version
        chat_template trust_request_chat_template hf_chat_template_name completion_template file_storage_path
        enable_cache_report return_input_ids return_output_ids default_chat_template_kwargs strip_thinking_cache
        enable_strict_thinking tool_server sampling_defaults asr_max_buffer_seconds asr_max_concurrent_sessions
        preferred_sampling_params allow_auto_truncate stream_interval batch_notify_size
        stream_response_default_include_usage incremental_streaming_output log_level log_level_http log_requests
        log_requests_level log_requests_format log_requests_target uvicorn_access_log_exclude_prefixes crash_dump_folder
        show_time_cost enable_metrics smg_http_sidecar_port enable_mfu_metrics enable_metrics_for_all_schedulers
        load_snapshot_publish_interval tokenizer_metrics_custom_labels_header tokenizer_metrics_allowed_custom_labels
        extra_metric_labels bucket_time_to_first_token bucket_inter_token_latency bucket_e2e_request_latency
        prompt_tokens_buckets generation_tokens_buckets gc_warning_threshold_secs decode_log_interval
        enable_request_time_stats_logging kv_events_config load_publish_endpoint enable_forward_pass_metrics
        forward_pass_metrics_worker_id forward_pass_metrics_ipc_name enable_trace trace_modules otlp_traces_endpoint
        otlp_service_name export_metrics_to_file export_metrics_to_file_dir constrained_json_whitespace_pattern
        constrained_json_disable_any_whitespace constrained_json_max_whitespace_cnt grammar_backend reasoning_parser
        tool_call_parser sampling_backend grpc_response_timeout_secs enable_http_worker_reuseport enable_response_store
        enable_watermark watermark_config msprobe_dump_config
    """,
    "scheduling policy and runtime admission: read per batch, after the pools exist": """
        prefill_decode_interval prefill_decode_interval_min_bs prefill_max_requests schedule_policy
        enable_priority_scheduling disable_priority_preemption default_priority_value abort_on_priority_when_disabled
        schedule_low_priority_values_first priority_scheduling_preemption_threshold retraction_policy
        schedule_conservativeness radix_eviction_policy radix_eviction_policy_config num_continuous_decode_steps
        scheduler_recv_interval enable_mixed_chunk enable_prefill_delayer prefill_delayer_max_delay_passes
        prefill_delayer_token_usage_low_watermark prefill_delayer_forward_passes_buckets
        prefill_delayer_wait_seconds_buckets prefill_delayer_queue_min_ratio prefill_delayer_max_delay_ms
    """,
    "weight loading and kernels: weights are inside the measured budget (free memory after load); the GPU-only "
    "estimate refuses the weight-moving ones by name (quantization, CPU offload, redundant experts)": """
        load_format model_loader_extra_config trust_remote_code quantization quantization_param_path
        enable_fp32_lm_head modelopt_quant modelopt_checkpoint_restore_path modelopt_checkpoint_save_path
        modelopt_export_path quantize_and_serve rl_quant_profile enable_tf32_matmul fp8_gemm_runner_backend
        fp4_gemm_runner_backend bf16_gemm_backend disable_flashinfer_autotune flashinfer_autotune_skip_ops mamba_backend
        enable_profile_cuda_graph enable_cudagraph_gc enable_layerwise_nvtx_marker enable_nccl_nvls
        triton_attention_reduce_in_fp32 triton_attention_num_kv_splits triton_attention_split_tile_size
        enable_fused_qk_norm_rope enable_precise_embedding_interpolation enable_fused_moe_sum_all_reduce
        disable_custom_all_reduce enable_mscclpp enable_torch_symm_mem pre_warm_nccl
        enforce_disable_flashinfer_allreduce_fusion flashinfer_allreduce_fusion_backend enable_flashinfer_allreduce_fusion
        enable_torch_compile enable_torch_compile_debug_mode torch_compile_max_bs speculative_draft_model_revision
        speculative_draft_load_format speculative_accept_threshold_single speculative_accept_threshold_acc
        speculative_draft_model_quantization spec_trace_dir moe_runner_backend flashinfer_mxfp4_moe_precision
        ep_num_redundant_experts ep_dispatch_algorithm init_expert_location enable_eplb eplb_algorithm
        eplb_rebalance_num_iterations eplb_rebalance_layers_per_chunk eplb_min_rebalancing_utilization_threshold
        expert_distribution_recorder_mode expert_distribution_recorder_buffer_size expert_balancedness_report_mode
        cpu_offload_gb offload_group_size offload_num_in_group offload_prefetch_step offload_mode
        download_dir model_checksum delete_ckpt_after_loading decrypted_config_file decrypted_draft_config_file
        checkpoint_engine_wait_weights_before_ready modelexpress_config weight_cache_mode weight_cache_socket
        weight_cache_timeout enable_memory_saver enable_weights_cpu_backup enable_draft_weights_cpu_backup
        disable_outlines_disk_cache custom_weight_loader startup_weight_load_mode weight_loader_disable_mmap
        weight_loader_drop_cache_after_load weight_loader_prefetch_checkpoints weight_loader_prefetch_num_threads
    """,
    "HiCache host tier and hybrid-SWA knobs: host memory, or pools the hybrid mamba path does not build": """
        hicache_host_memory_mode hicache_ratio hicache_size hicache_write_policy hicache_io_backend hicache_mem_layout
        hicache_storage_backend hicache_storage_prefetch_policy hicache_storage_backend_extra_config
        hicache_storage_prefetch_retry_poll_interval hicache_storage_prefetch_retry_max_attempts
        hicache_host_memory_fraction swa_full_tokens_ratio disable_hybrid_swa_memory
    """,
    "multimodal preprocessing, debugging, remote weights, RL hooks and other per-request features": """
        mm_processor_worker_num mm_io_worker_num allowed_media_domains media_url_max_file_size_mb
        mm_preprocess_cache_size_mb trust_mm_content_hashes limit_mm_data_per_request image_processor_backend
        disable_fast_image_processor kv_canary kv_canary_sweep_interval kv_canary_real_data
        enable_dynamic_batch_tokenizer dynamic_batch_tokenizer_batch_size dynamic_batch_tokenizer_batch_timeout
        enable_tokenizer_batch_encode disable_tokenizer_batch_decode debug_tensor_dump_output_folder
        debug_tensor_dump_layers debug_tensor_dump_input_file enable_custom_logit_processor enable_return_hidden_states
        return_hidden_states_mode enable_return_routed_experts enable_return_indexer_topk sampling_mask_max_tokens
        engine_info_bootstrap_port disaggregation_bootstrap_port disaggregation_ib_device
        disaggregation_decode_polling_interval disaggregation_enable_kv_checksum deepep_config
    """,
    # Reclassified (issue 28), each with where SGLang reads it.
    "the decode capture list only: `cuda_graph_hook.generate_decode_cuda_graph_batch_sizes` lists every size up to "
    "max_bs instead of the padded ladder; max_bs, which the automatic mem_fraction_static reads "
    "(`memory_hook.handle_gpu_memory_settings`), is unchanged (both lists end at max_bs)": "disable_cuda_graph_padding",
    "CUDA-graph debugging output only (`cuda_graph_runner`), no buffer sized by it": "debug_cuda_graph",
    "read by `moe_hook.handle_a2a_moe`, which runs after `handle_gpu_memory_settings` (pipeline.py): `normal` turns the "
    "decode graph off after mem_fraction_static is fixed; DeepEP's buffers are allocated at first dispatch, outside the "
    "budget (slack_consumers): the split is unchanged": "deepep_mode",
    "DSPARK's runtime planner tables and verify-width alignment (`dspark_components/dspark_planner.py`), read "
    "after the pools are sized; the draft-token count they act within is --speculative-dspark-block-size's": """
        speculative_dspark_sps_table_path speculative_dspark_confidence_sts_path
        speculative_dspark_align_verify_tokens_to_graph_tier
    """,
    "an attention kernel variant of FlashInfer MLA prefill (`flashinfer_mla_backend`): no pool or buffer is sized by it":
        "flashinfer_mla_disable_ragged",
    "the PD transfer engine (mooncake / nixl / ...): it registers the pools SGLang already sized with the engine; the "
    "split does not read it (`disaggregation/`)": "disaggregation_transfer_backend",
    "encoder-disaggregation endpoints: only read with --encoder-only / --language-only, which are refused": """
        encoder_transfer_backend encoder_urls encoder_bootstrap_port encoder_register_urls
    """,
    "RL weight-sync endpoints and remote weight loading: weights are inside the measured budget": """
        remote_instance_weight_loader_seed_instance_ip remote_instance_weight_loader_seed_instance_service_port
        remote_instance_weight_loader_send_weights_group_ports remote_instance_weight_loader_backend
        remote_instance_weight_loader_start_seed_via_transfer_engine
    """,
}

# --------------------------------------------------------------------------- refused
REFUSED = {
    "the YAML config file cannot be read here: pass its flags on the command line": "config",
    "model class / dtype / config parsing: changes the layers, their dtype or the state shapes": """
        is_embedding enable_multimodal model_impl model_config_parser json_model_override_args dtype
    """,
    "KV / memory-pool layout variants (unified pool, page-major, chunked prefix, dynamic chunking, C128 pages, "
    "KV sharding, prefill-only KV): another pool than the one sized here": """
        enable_dynamic_chunking c128_page_size prefill_only_disable_kv_cache enable_page_major_kv_layout
        enable_unified_memory disable_chunked_prefix_cache enable_kv_cache_sharding enable_dsa_cache_layer_split
        prefill_kv_cache_dequant_dtype swa_prefix_tails enable_encoder_swa_bounded_replay
        enable_decoder_swa_bounded_replay qsa_indexer_dtype enable_linker_mla_dedup
    """,
    "context / attention / MoE parallelism variants: change what each rank holds": """
        pp_async_batch_depth attn_cp_size moe_dp_size dwdp_size dcp_comm_backend dcp_replicate_q_proj enable_prefill_cp
        cp_strategy enable_cp_decode_attn_tp enable_dp_attention_local_control_broadcast enable_dp_lm_head
        enable_tp_lm_head_all_to_all enable_attn_tp_input_scattered enable_shared_experts_attn_tp shared_experts_tp_size
        enable_dense_mlp_attn_tp enable_layernorm_sp disable_attn_tp_gather moe_dense_tp_size
        enable_megamoe_for_layernorm_sp boundary_reduction enable_quant_communications enable_aiter_allreduce_fusion
        disable_aiter_allreduce_fusion_in_prefill disable_aiter_allreduce_fusion_in_decode
    """,
    "attention backends per phase and their model-specific variants: change the page size and the radix checks": """
        decode_attention_backend prefill_attention_backend enable_lean_attention radix_cache_backend mm_attention_backend
        dsa_prefill_backend dsv4_prefill_backend dsa_decode_backend dsa_paged_mqa_logits_backend dsa_topk_backend
        dsv4_attn_backend enable_deepseek_v4_fp4_indexer dsa_triton_union enable_dsa_fused_indexer
    """,
    "CUDA-graph capture lists and backends: change max_bs or the prefill graph the automatic mem_fraction_static "
    "reserves for": """
        cuda_graph_config cuda_graph_backend_decode cuda_graph_backend_prefill cuda_graph_bs_decode cuda_graph_bs_prefill
        cuda_graph_prefill_max_context cuda_graph_max_seq_len_prefill
    """,
    "speculative-decoding variants (UNO, draft backends, draft KV dtype and window, adaptive / decoupled "
    "speculation, ngram knobs): change the draft's pools, topk or the verify buffers": """
        uno_lora_path speculative_use_rejection_sampling speculative_token_map speculative_attention_mode
        speculative_draft_attention_backend speculative_dsa_topk_backend speculative_draft_kv_cache_dtype
        speculative_draft_window_size speculative_moe_runner_backend speculative_moe_a2a_backend
        speculative_enable_w4a4_mxfp4_megamoe enable_multi_layer_eagle speculative_adaptive speculative_adaptive_config
        decoupled_spec_bind_endpoint decoupled_spec_connect_endpoints decoupled_spec_rank decoupled_spec_role
        speculative_ngram_min_bfs_breadth speculative_ngram_max_bfs_breadth speculative_ngram_match_type
        speculative_ngram_max_trie_depth speculative_ngram_capacity speculative_ngram_external_corpus_path
        speculative_ngram_external_sam_budget speculative_ngram_external_corpus_max_tokens
        speculative_domino_candidate_pool_size speculative_use_block_verification speculative_draft_sink_size
        enable_return_aux_hidden_states return_aux_hidden_state_layer_ids
    """,
    "MoE kernels and expert placement (MegaMoE, fused EP, elastic EP, paged experts): move expert weights or "
    "buffers": """
        enable_w4a4_mxfp4_megamoe deepep_v2_mode fuseep_mode deepep_dispatcher_output_dtype elastic_ep_backend
        enable_elastic_expert_backup mooncake_ib_device enable_waterfill ep_join_mode ep_join_rank_offset
        elastic_ep_initial_size max_ep_size elastic_ep_scale_timeout disable_flashinfer_cutlass_moe_fp4_allgather
        disable_shared_experts_fusion enforce_shared_experts_fusion flashinfer_a2a_dispatch_type enable_paged_experts
        paged_experts_num_resident enable_nvidia_megakernel enable_amd_monokernel enable_scattered_sconv
    """,
    "mamba state options not modelled (stochastic rounding, external linkers, sparse hierarchical cache)": """
        enable_mamba_cache_stochastic_rounding mamba_cache_philox_rounds enable_unified_cache_external_linker
        unified_cache_external_linker_backend unified_cache_external_linker_config enable_hisparse hisparse_config
    """,
    "multimodal caches and encoders: reserve or allocate GPU memory the split does not model": """
        enable_broadcast_mm_inputs_process enable_prefix_mm_cache mm_enable_dp_encoder mm_process_config
        enable_mm_global_cache mm_global_cache_backend mm_feature_transport
    """,
    "LoRA: the manager's buffers and adapter pools are allocated before the pools are sized (ModelRunner.initialize); "
    "not modelled": """
        enable_lora enable_lora_overlap_loading max_lora_rank lora_target_modules lora_paths max_loaded_loras
        max_loras_per_batch lora_eviction_policy lora_backend max_lora_chunk_size experts_shared_outer_loras
        lora_use_virtual_experts lora_strict_loading lora_drain_wait_threshold
    """,
    "overlap / multiplexing / KV offload engines (LMCache, FlexKV, KTransformers, PD-mux): other pools or weights "
    "on the GPU": """
        enable_single_batch_overlap tbo_token_distribution_threshold enable_lmcache lmcache_config_file enable_flexkv
        flexkv_config_file kt_weight_path kt_method kt_cpuinfer kt_threadpool_count kt_num_gpu_experts
        kt_max_deferred_experts_per_token enable_pdmux pdmux_config_path sm_group_num
    """,
    "diffusion LLMs, encoder / language-only splits, role switching, PD decode offload and allocation policies: "
    "another serving shape": """
        dllm_algorithm dllm_algorithm_config dllm_fdfo disaggregation_decode_enable_offload_kvcache
        disaggregation_decode_retraction_backup optimistic_prefill_attempts encoder_only language_only
        language_model_only enable_adaptive_dispatch_to_encoder enable_pd_role_switch
        disaggregation_decode_host_receive_threshold disaggregation_decode_allocation_policy
    """,
    "runtime features that change resolution (MLX sampling, streaming sessions, RL on-policy mode, MIS, forward hooks, "
    "PLE offload, free-slot delay)": """
        mlx_enable_sampling enable_streaming_session enable_session_radix_cache min_free_slots_delay rl_on_policy_target
        enable_mis forward_hooks ple_offload_embedding ple_offload_backend ple_offload_dir
    """,
}


def _rows(groups: dict[str, str], verdict: Verdict) -> list[FlagRow]:
    return [FlagRow(dest, verdict, reason) for reason, names in groups.items() for dest in names.split()]


@lru_cache(maxsize=1)
def flag_table() -> dict[str, FlagRow]:
    """{dest: row} for every dest of SGLang 0.5.23's parser. A dest listed twice, or a
    parser dest without a row, is a bug (ValueError): the table must be complete and flat."""
    table: dict[str, FlagRow] = {}
    for row in _rows(MODELLED, "modelled") + _rows(NO_EFFECT, "no_effect") + _rows(REFUSED, "refused"):
        if row.dest in table:
            raise ValueError(f"{row.dest} has two rows in the flag table")
        table[row.dest] = row
    dests = {e["dest"] for e in json.loads(FLAGS_FILE.read_text())["flags"]}
    # <=0.5.13's parser spells the parallel sizes by their long names: those dests are ours too.
    missing = sorted(dests - set(table))
    extra = sorted(set(table) - dests)
    if missing or extra:
        raise ValueError(f"flag table out of step with SGLang 0.5.23's parser: missing {missing}, unknown {extra}")
    return table


def verdict(dest: str) -> FlagRow | None:
    """The row of `dest` (None for a dest 0.5.23's parser does not have: an older release's)."""
    return flag_table().get(dest)


def ignored_dests() -> frozenset[str]:
    return frozenset(d for d, r in flag_table().items() if r.verdict == "no_effect")
