#!/usr/bin/env bash
# Trial-allocate, on ONE GPU, what SGLang 0.5.23 allocates for one pipeline stage of
# Kimi-K3 and of Qwen3-Next, with the budget taken from the device the way SGLang's
# profiler takes it (free memory before / after the weights), and print measured against
# predicted bytes per pool. Finishes in well under 5 minutes (hard limit: 290 s).
#
#   scripts/gpu_check.sh               # on a node with a CUDA build of torch==2.13.0
#   scripts/gpu_check.sh --plan-only   # anywhere: print what would be allocated, no torch
#
# Environment:
#   PYTHON                 interpreter (default .venv/bin/python, else python3)
#   CUDA_INDEX             which GPU (default 0)
#   KIMI_K3_WEIGHTS_GIB    weights held per rank for Kimi-K3 at tp 8 pp 8 (default: the
#                          parameter bytes SGLang builds on stage 0's largest rank, from
#                          service/solver/weights/ for the shipped MXFP4 config)
#   QWEN3_NEXT_WEIGHTS_GIB weights held per rank for Qwen3-Next-80B at tp 4 (default: the
#                          same for its bf16 config; the NEXTN case adds nothing on stage 0)
#   GPU_CHECK_JSON         also write every TrialResult to this file
#   GPU_CHECK_TIMEOUT_S    hard limit (default 290)
#
# Exit 0: every case allocated and measured == predicted up to the CUDA caching
# allocator's 512-byte block rounding, and memory returned to the baseline; 1 otherwise;
# 2 when no CUDA device is usable.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
exec timeout --kill-after=10 "${GPU_CHECK_TIMEOUT_S:-290}" "$PY" -m mambasizer.service.worker.gpu_check "$@"
