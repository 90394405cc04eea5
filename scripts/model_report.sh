#!/usr/bin/env bash
# Every figure a model's card reports on the public dev data, one evaluation after another, each
# into its own .txt (the printed tables) and .json (everything, per attribute):
#   1. OA-Mine, AE-110k and WDC-PAVE dev with both decoders interleaved (F1, n/a, unjudged slots
#      given a value, seen / unseen values, ECE, HPD's speedup over AR-JSON);
#   2. each ImplicitAVE domain's val.tsv (200 products taken evenly; its majority floor beside it);
#   3. WDC-PAVE dev against its normalized gold (HPD).
#
#   bash scripts/model_report.sh MODEL OUT          # e.g. models/slotwise-gemma3 .data/report
#
# Run it with nothing else heavy on the machine: speeds are read from it. About 80 minutes for the
# 135M default on 2 CPU threads (AR-JSON takes most of it). The confidence scaling the card stores
# is fitted afterwards from step 1's files, without decoding again:
#   .venv/bin/python -m extraction calibrate --model MODEL OUT/oa.json OUT/ae.json OUT/wdc.json
set -uo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:?usage: model_report.sh MODEL OUT}
OUT=${2:?usage: model_report.sh MODEL OUT}
PY=${PY:-.venv/bin/python}
AVE=${AVE:-../shared/data/ave}
THREADS=${THREADS:-2}
WDC_DEV=models/slotwise-ave/splits/wdc-pave-dev.jsonl
mkdir -p "$OUT"
status=0

evaluate() {  # evaluate NAME ARGS...: one evaluation into OUT/NAME.txt and OUT/NAME.json
  local name=$1
  shift
  printf '== %s (%s)\n' "$name" "$(date -u +%H:%M:%S)"
  "$PY" -m extraction evaluate --model "$MODEL" --threads "$THREADS" --stack 4 --rows 16 --batch 16 \
    --json "$OUT/$name.json" "$@" >"$OUT/$name.txt" 2>&1 || { echo "failed (rc $?): see $OUT/$name.txt"; status=1; }
}

evaluate oa --data "$AVE/oa-mine/dev.jsonl" --decoders ar,hpd
evaluate ae --data "$AVE/ae-110k/dev.jsonl" --decoders ar,hpd
evaluate wdc --data "$WDC_DEV" --decoders ar,hpd
for val in "$AVE"/implicitave/*/val.tsv; do
  evaluate "implicit-$(basename "$(dirname "$val")")" --data "$val" --decoders ar,hpd --sample 200
done
evaluate wdc-normalized --data "$WDC_DEV" --gold normalized --decoders hpd
printf '== done (%s)\n' "$(date -u +%H:%M:%S)"
exit $status
