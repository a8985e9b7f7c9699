#!/usr/bin/env bash
# Can the JPEG loader feed DeiT-S training on this machine? Run on the GPU machine (from the unpacked bundle:
# scripts/gpu_bundle.sh, carry .gpu/bundle.tar.xz) in one job:
#   1. bench_data: decode + transform throughput of ImageNet-like JPEGs (500x375), 1 thread and all cores;
#   2. a JPEG ImageFolder (CLASSES classes x the 64 bench JPEGs, hard links) trained with the full DeiT recipe
#      (configs/imagenet/deit_small_dense.yaml: RandAugment, erasing, Mixup/CutMix, repeated augmentation) —
#      `vitrain train` img/s with WORKERS loader threads;
#   3. the same model and batch on synthetic data (`vitrain bench`), the ceiling.
# Prints the ratio real / synthetic (target: >= 90%). Usage: bash scripts/bench_feed.sh OUT_DIR
# Also prints the steady-state speed: the mean of the progress windows after the first epoch (metrics.jsonl).
# Env: WORKERS (default: all cores), CLASSES (800), EPOCHS (3), BATCH (256 per GPU), GPUS (1; more: data-parallel
# through `vitrain launch`, WORKERS / GPUS loader threads per process; the synthetic ceiling stays one GPU's),
# BENCH_DATA (1; 0 skips step 1), CUDA_GRAPH (0; 1: train with train.cuda_graph and bench with --cuda-graph, one GPU).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$ROOT"
WORKERS=${WORKERS:-$(nproc)} CLASSES=${CLASSES:-800} EPOCHS=${EPOCHS:-3} BATCH=${BATCH:-256} GPUS=${GPUS:-1}
BIN=${BIN:-$ROOT/.gpu/bin}
export LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

if [ "${BENCH_DATA:-1}" = 1 ]; then
  echo "== bench_data (decode + transforms, $WORKERS threads)"
  "$BIN/bench_data" --threads "$WORKERS" | tee "$OUT/bench_data.txt"
fi

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
"$BIN/bench_data" --write "$tree/src" >/dev/null
jpegs=$(find "$tree/src" -type f | sort)
for split in train val; do
  for c in $(seq -w 1 "$CLASSES"); do
    mkdir -p "$tree/$split/n$c"
    n=0
    for f in $jpegs; do
      n=$((n + 1))
      [ "$split" = val ] && [ "$n" -gt 2 ] && break
      ln "$f" "$tree/$split/n$c/$n.JPEG" 2>/dev/null || cp "$f" "$tree/$split/n$c/$n.JPEG"
    done
  done
done
echo "== tree: $CLASSES classes, $(find "$tree/train" -name '*.JPEG' | wc -l) train JPEGs"

echo "== vitrain train (real JPEGs, full DeiT recipe, $GPUS GPU(s), $WORKERS loader threads)"
launch=(train --device cuda:0)
graph_set=() graph_flag=()
[ "${CUDA_GRAPH:-0}" = 1 ] && graph_set=(--set train.cuda_graph=true) graph_flag=(--cuda-graph)
((GPUS > 1)) && launch=(launch -n "$GPUS" -- train --device cuda)  # one process per GPU, WORKERS shared out
"$BIN/vitrain" "${launch[@]}" --config configs/imagenet/deit_small_dense.yaml \
  --set data.data_dir="$tree" --set data.workers=$((WORKERS / GPUS)) --set train.batch_size="$BATCH" --set train.global_batch_size=0 \
  --set train.epochs="$EPOCHS" --set schedule.warmup_epochs=1 --set train.log_interval=10 \
  --set train.output="$OUT/run" "${graph_set[@]}" 2>&1 | tee "$OUT/train.log" | grep -E "img/s|data [0-9]+%" | tail -4
real=$(sed -n 's/.*training: [0-9.]* s, \([0-9.]*\) img\/s.*/\1/p' "$OUT/train.log" | tail -1)
steady=$(grep '"img_per_s"' "$OUT/run/metrics.jsonl" | awk -F'"epoch": *' '{split($2, a, /[,}]/); if (a[1] > 1) print}' |
  sed -n 's/.*"img_per_s": *\([0-9.e+]*\).*/\1/p' | awk '{s += $1; n++} END {if (n) printf "%.0f", s / n; else print 0}')

echo "== vitrain bench (synthetic data, same model and batch)"
"$BIN/vitrain" bench --model deit_small_patch16_224 --batch-size "$BATCH" --steps 30 --warmup 5 --amp \
  --device cuda:0 "${graph_flag[@]}" | tee "$OUT/bench.txt" | grep train:
synth=$(sed -n 's/^train: \([0-9.]*\) img\/s.*/\1/p' "$OUT/bench.txt")
awk -v r="$real" -v t="$steady" -v s="$synth" 'BEGIN {printf "real JPEG training %.0f img/s (steady state after epoch 1: %.0f) vs synthetic %.0f img/s: %.0f%% (steady %.0f%%)\n", r, t, s, 100 * r / s, 100 * t / s}' |
  tee "$OUT/feed.txt"
