#!/usr/bin/env bash
# The dense benchmark: DeiT-T and DeiT-S, ours with dense and MiTA attention, timm eager and torch.compile in its
# default, reduce-overhead and max-autotune modes (dense; the official MiTA needs flash-attn, which is not installed
# there), training and inference, batch 256 and 1024, 224², bf16, synthetic data, all in one run on the same GPU;
# img/s as the median of REPEATS timed windows with their spread, step time, peak memory and the ratios against
# timm eager and against the strongest timm mode (scripts/bench_table.py).
#   bash scripts/bench_gpu.sh OUT_DIR
# Run on the GPU machine with .gpu/bundle.tar.xz (scripts/gpu_bundle.sh) carried: it is unpacked here; or
# VITRAIN=/path/to/vitrain. Also fine as gpu_check.sh's extra command (after the tests):
# `bash scripts/gpu_check.sh bash scripts/bench_gpu.sh "$OUT"/bench`.
# Writes OUT_DIR/bench.jsonl (one line per implementation, model, attention and batch) and OUT_DIR/table.md; with
# APPEND=BENCHMARKS.md also appends a dated section (command + tables) to that file.
# Env: STEPS (default 50), WARMUP (10), REPEATS (3), BATCHES ("256 1024"), MODELS ("deit_tiny_patch16_224
#      deit_small_patch16_224"), ATTENTIONS ("dense mita"), TIMM_MODES ("eager compile reduce-overhead
#      max-autotune"; max-autotune spends minutes tuning; timm uses fused AdamW), TIMM_MODE_TIMEOUT (seconds for one
#      model in one mode, 0 = no limit; a mode cut by it gets a row with its error), GRAPH_MODES ("eager graph": ours
#      also with --cuda-graph, shown as "+graph"),
#      VITRAIN_ARGS (extra `vitrain bench` options, e.g. "--dwc").
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=$1
mkdir -p "$OUT"
JSONL=$OUT/bench.jsonl
: >"$JSONL"
STEPS=${STEPS:-50}
WARMUP=${WARMUP:-10}
REPEATS=${REPEATS:-3}
BATCHES=${BATCHES:-${BATCH:-256 1024}}
MODELS=${MODELS:-"deit_tiny_patch16_224 deit_small_patch16_224"}
ATTENTIONS=${ATTENTIONS:-dense mita}
TIMM_MODES=${TIMM_MODES:-"eager compile reduce-overhead max-autotune"}
GRAPH_MODES=${GRAPH_MODES:-"eager graph"}
TIMM_MODE_TIMEOUT=${TIMM_MODE_TIMEOUT:-0}

# Our binary needs the bundled libraries; Python must not see them (it keeps the machine's own).
if [ -z "${VITRAIN:-}" ]; then
  # Unpack every time, as gpu_check.sh does: a warm machine may keep an older .gpu/bin.
  if [ -f .gpu/bundle.tar.xz ]; then rm -rf .gpu/bin .gpu/lib && tar -C .gpu -xJf .gpu/bundle.tar.xz; fi
  VITRAIN=$ROOT/.gpu/bin/vitrain
fi
[ -x "$VITRAIN" ] || { echo "bench_gpu: no vitrain binary (set VITRAIN or carry .gpu/bundle.tar.xz)" >&2; exit 2; }
OUR_LIBS=$ROOT/.gpu/lib:/usr/local/cuda/lib64
PY=(env -u LD_LIBRARY_PATH python3)

env -u LD_LIBRARY_PATH nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee "$OUT/gpu.txt" || true
status=0
for batch in $BATCHES; do
  for model in $MODELS; do
    for attention in $ATTENTIONS; do
      for mode in $GRAPH_MODES; do
        graph_flag=""
        [ "$mode" = graph ] && graph_flag=--cuda-graph
        echo "== vitrain bench $model $attention batch $batch $mode"
        # shellcheck disable=SC2086  # VITRAIN_ARGS is a list of options
        LD_LIBRARY_PATH=$OUR_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$VITRAIN" bench --model "$model" \
          --attention "$attention" --batch-size "$batch" --steps "$STEPS" --warmup "$WARMUP" --repeats "$REPEATS" \
          --amp --infer --device cuda:0 --json "$JSONL" $graph_flag ${VITRAIN_ARGS:-} ||
          { echo "vitrain bench $model $attention $mode FAILED" >&2; status=1; }
      done
    done
  done
  # One process per (model, mode), so that a mode cut by TIMM_MODE_TIMEOUT (max-autotune tunes for minutes) leaves
  # a row saying so and the other modes' figures.
  for model in $MODELS; do
    for mode in $TIMM_MODES; do
      echo "== timm $model $mode batch $batch"
      limit=()
      [ "$TIMM_MODE_TIMEOUT" -gt 0 ] && limit=(timeout "$TIMM_MODE_TIMEOUT")
      rc=0
      "${limit[@]}" "${PY[@]}" scripts/bench_timm.py --models "$model" --modes "$mode" --batch-size "$batch" \
        --steps "$STEPS" --warmup "$WARMUP" --repeats "$REPEATS" --fused-adamw --out "$JSONL" || rc=$?
      if [ "$rc" -eq 124 ]; then
        echo "{\"impl\": \"timm_${mode//-/_}\", \"model\": \"$model\", \"batch_size\": $batch, \"train_img_per_s\": null, \"infer_img_per_s\": null, \"error\": \"cut after TIMM_MODE_TIMEOUT=$TIMM_MODE_TIMEOUT s\"}" >>"$JSONL"
      fi
      [ "$rc" -eq 0 ] || { echo "bench_timm.py $model $mode FAILED (exit $rc)" >&2; status=1; }
    done
  done
done

"${PY[@]}" scripts/bench_table.py "$JSONL" --gpu "$(cat "$OUT/gpu.txt" 2>/dev/null || true)" >"$OUT/table.md"
if [ -n "${APPEND:-}" ]; then
  {
    echo
    echo "### bench_gpu.sh, $(date -u +%Y-%m-%d) ($(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
    echo "\`BATCHES=\"$BATCHES\" MODELS=\"$MODELS\" ATTENTIONS=\"$ATTENTIONS\" GRAPH_MODES=\"$GRAPH_MODES\" TIMM_MODES=\"$TIMM_MODES\" STEPS=$STEPS WARMUP=$WARMUP REPEATS=$REPEATS bash scripts/bench_gpu.sh OUT\`"
    echo
    cat "$OUT/table.md"
  } >>"$APPEND"
fi
cat "$OUT/table.md"
exit "$status"
