#!/usr/bin/env bash
# Reproduces the MiTA paper's Table 2: every row of configs/imagenet/paper_table2.tsv (DeiT-T/S × dense, linear,
# the linear-attention baselines, bra, agent, agent+bias, mita, mita+dwc, mita+dwc+gate) trained on an
# ImageNet-style folder, then collected beside the paper's numbers into OUT_DIR/table2.md (scripts/collect_table2.sh).
#   scripts/reproduce_table2.sh DATA_DIR GPUS [OUT_DIR]      (DATA_DIR holds train/ and val/ class folders)
# First it measures each model's training throughput (`vitrain bench`, synthetic data, one device) and prints
# the estimated GPU-hours: epochs × training images / img/s, per row and in total (wall-clock: ÷ GPUS, assuming
# linear scaling). Then it trains each config into OUT_DIR/<config>/ (GPUS > 1: `vitrain launch -n GPUS`; the
# config's global batch is divided over the GPUs, so it and the learning rate stay the paper's), resuming a run
# that has a checkpoint and skipping a finished one, so rerunning the command after an interruption continues.
# Env knobs (defaults: the paper's recipe on the GPU):
#   VITRAIN        the binary (default `vitrain` on PATH, else build/bin/vitrain)
#   CONFIGS        config names to run (default: every row of PAPER_TSV, configs/imagenet/paper_table2.tsv)
#   CONFIG_SET     the configs/ folder the rows name (default imagenet; scripts/reproduce_table7.sh: finetune)
#   DEVICE         train/bench device (default: cuda; "cpu" for the CI-sized mode, GPUS must then be 1)
#   EPOCHS         train.epochs override (default: the config's 300)
#   BATCH          per-GPU batch instead of the config's train.global_batch_size (1024, divided over GPUS)
#   EXTRA_SET      more `--set key=value` overrides for every run, space-separated (e.g. to shrink the models)
#   BENCH_BATCH, BENCH_STEPS, BENCH_WARMUP   `vitrain bench` sizes (default 256, 20, 5)
#   BENCH_EXTRA    more `vitrain bench` options (e.g. "--threads 2")
#   BENCH_MODEL, BENCH_M, BENCH_K   bench another preset / MiTA m, k than the config's (CI: vit_micro, 4, 4)
#   BENCH_N_WIN, BENCH_TOPK         bench BRA with another n_win, topk than the config's (CI: 2, 2)
#   N_TRAIN        the number of training images (default: counted in DATA_DIR/train)
#   ESTIMATE_ONLY  1: print the estimate and stop
set -euo pipefail
usage="usage: $0 DATA_DIR GPUS [OUT_DIR]"
if [ $# -lt 2 ] || [ $# -gt 3 ]; then echo "$usage" >&2; exit 2; fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -d "$1/train" ] || { echo "error: no '$1/train' (DATA_DIR needs train/ and val/ class folders)" >&2; exit 1; }
DATA=$(cd "$1" && pwd)
# yaml_get, epochs_done, bench_once, json_number, repro_setup
source "$ROOT/scripts/reproduce_lib.sh"
repro_setup "${CONFIG_SET:-imagenet}" paper_table2.tsv "$2" "${3:-}" runs/table2
export CONFIG_DIR
CONFIGS=${CONFIGS:-$(awk -F'\t' '!/^#/ && NF { print $1 }' "$PAPER_TSV")}

# ---- 1. throughput and the estimate ----
if [ -n "${N_TRAIN:-}" ]; then
  n_train=$N_TRAIN
else
  echo "counting training images in $DATA/train ..."
  n_train=$(find "$DATA/train" -type f | wc -l)
fi
bench_args=(--batch-size "${BENCH_BATCH:-256}" --steps "${BENCH_STEPS:-20}" --warmup "${BENCH_WARMUP:-5}"
            --device "$DEVICE")
[[ $DEVICE == cpu ]] || bench_args+=(--amp)
read -r -a bench_extra <<<"${BENCH_EXTRA:-}"

estimate=$OUT/estimate.tsv
printf 'config\tmodel\tattention\tepochs\timg_per_s\tgpu_hours\twall_hours\n' >"$estimate"
for name in $CONFIGS; do
  yaml=$CONFIG_DIR/$name.yaml
  [ -f "$yaml" ] || { echo "error: no config '$yaml'" >&2; exit 1; }
  mkdir -p "$OUT/$name"
  model=$(yaml_get "$yaml" model.name)
  attn=$(yaml_get "$yaml" model.attention.type)
  kind=$attn
  [[ $(yaml_get "$yaml" model.attention.dwc) == true ]] && kind+=+dwc
  [[ $(yaml_get "$yaml" model.attention.gate) == true ]] && kind+=+gate
  epochs=${EPOCHS:-$(yaml_get "$yaml" train.epochs)}
  args=(--model "${BENCH_MODEL:-$model}" --attention "$attn")
  if [[ $attn == mita* ]]; then
    args+=(--m "${BENCH_M:-$(yaml_get "$yaml" model.attention.m)}" --k "${BENCH_K:-$(yaml_get "$yaml" model.attention.k)}")
    args+=(--landmark-pool "$(yaml_get "$yaml" model.attention.landmark_pool)")
    [[ $kind == *+dwc* ]] && args+=(--dwc)
    [[ $kind == *+gate ]] && args+=(--gate)
  fi
  if [[ $attn == bra ]]; then  # the config's regions (vitrain's defaults where it sets none)
    n_win=${BENCH_N_WIN:-$(yaml_get "$yaml" model.attention.n_win)}
    topk=${BENCH_TOPK:-$(yaml_get "$yaml" model.attention.topk)}
    [ -n "$n_win" ] && args+=(--n-win "$n_win")
    [ -n "$topk" ] && args+=(--topk "$topk")
  fi
  bench_once "$OUT/$name" "${args[@]}" "${bench_args[@]}" "${bench_extra[@]}"
  ips=$(json_number "$(cat "$OUT/$name/bench.json")" train_img_per_s)
  [ -n "$ips" ] || { echo "error: no train_img_per_s in $OUT/$name/bench.json" >&2; exit 1; }
  awk -v n="$name" -v m="$model" -v a="$kind" -v e="$epochs" -v ips="$ips" -v imgs="$n_train" -v g="$GPUS" \
    'BEGIN { h = e * imgs / ips / 3600; printf "%s\t%s\t%s\t%s\t%.1f\t%.4f\t%.4f\n", n, m, a, e, ips, h, h / g }' \
    >>"$estimate"
done
echo
echo "Estimated cost on this hardware ($n_train training images, $GPUS × $DEVICE, img/s from vitrain bench):"
awk -F'\t' '
  NR == 1 { printf "%-26s %-24s %-15s %6s %9s %9s %9s\n", "config", "model", "attention", "epochs", "img/s", "GPU-h", "wall-h"; next }
  { printf "%-26s %-24s %-15s %6s %9.1f %9.3f %9.3f\n", $1, $2, $3, $4, $5, $6, $7; gh += $6; wh += $7 }
  END { printf "%-26s %-24s %-15s %6s %9s %9.3f %9.3f\n", "total", "", "", "", "", gh, wh }' "$estimate"
echo
[[ ${ESTIMATE_ONLY:-0} == 1 ]] && exit 0

# ---- 2. the runs ----
for name in $CONFIGS; do
  yaml=$CONFIG_DIR/$name.yaml
  run=$OUT/$name
  epochs=${EPOCHS:-$(yaml_get "$yaml" train.epochs)}
  done_epochs=$(epochs_done "$run/metrics.jsonl" test_top1)
  if [ -f "$run/model.safetensors" ] && ((done_epochs >= epochs)); then
    echo "== $name: finished ($done_epochs epochs), skipped"
    continue
  fi
  sets=(--set "data.data_dir=$DATA" --set "train.output=$run")
  [ -n "${EPOCHS:-}" ] && sets+=(--set "train.epochs=$EPOCHS")
  # The config's train.global_batch_size is divided over the GPUs by vitrain; BATCH replaces it by a per-GPU batch.
  [ -n "${BATCH:-}" ] && sets+=(--set "train.batch_size=$BATCH" --set "train.global_batch_size=0")
  for s in "${extra_set[@]}"; do sets+=(--set "$s"); done
  train=(train --config "$yaml" "${sets[@]}" --device "$DEVICE" --resume auto)
  if ((GPUS > 1)); then
    cmd=("$VITRAIN" launch -n "$GPUS" -- "${train[@]}")
  else
    cmd=("$VITRAIN" "${train[@]}")
  fi
  state=starting
  [ -f "$run/last.safetensors" ] || [ -f "$run/recovery.safetensors" ] && state="resuming (epochs done: $done_epochs)"
  echo "== $name: $state; log $run/console.log"
  "${cmd[@]}" >>"$run/console.log" 2>&1 || { echo "error: $name failed, see $run/console.log" >&2; exit 1; }
done

# ---- 3. the table ----
"$ROOT/scripts/collect_table2.sh" "$OUT"
cat "$OUT/table${TABLE:-2}.md"
