#!/usr/bin/env bash
# Reproduces the MiTA paper's Table 4: every configs/ade20k/*.yaml row of paper_table4.tsv (ViT-T/S/B at 512²,
# ViT-L at 640², × {standard attention, MiTA}, CBT decoder; plus the ViT-S linear-decoder baseline) trained on
# ADE20K, then collected beside the paper's numbers into OUT_DIR/table4.md (scripts/collect_table4.sh).
#   scripts/reproduce_table4.sh DATA_DIR [GPUS] [OUT_DIR]   (DATA_DIR: ADEChallengeData2016 or its parent)
# First it measures each config's training and evaluation-window throughput (`vitrain bench --config`, synthetic
# data, one device) and prints the estimated GPU-hours: epochs × training images / train img/s, plus the
# evaluations (one every eval.interval epochs and at the end: validation images × EVAL_WINDOWS windows / eval
# img/s; wall-clock: ÷ GPUS, assuming linear scaling). Then it trains the configs one after another, each into
# OUT_DIR/<config>/ (GPUS > 1: data parallel with `vitrain launch -n GPUS`, the per-process batch the config's
# 8 / GPUS so the global batch and the learning rate stay the paper's), resuming a run that has a checkpoint and
# skipping a finished one, so rerunning the command after an interruption continues.
# The backbones are timm's vit_{tiny,small,base,large}_patch16_384 (AugReg, ImageNet-21k → 1k at 384) as
# safetensors files PRETRAINED/<name>.safetensors, e.g. written with
#   python -c "import timm, safetensors.torch as st; m = timm.create_model('vit_small_patch16_384', pretrained=True);
#              st.save_file(m.state_dict(), 'vit_small_patch16_384.safetensors')"
# Env knobs (defaults: the paper's recipe on the GPU):
#   VITRAIN        the binary (default `vitrain` on PATH, else build/bin/vitrain)
#   CONFIGS        config names to run (default: all rows of configs/ade20k/paper_table4.tsv)
#   PRETRAINED     folder of the timm backbones (default: pretrained/ under the repository); "none": random init
#   DEVICE         train/bench device (default: cuda; "cpu" for the CI-sized mode, GPUS must then be 1)
#   EPOCHS         train.epochs override (default: the config's 64)
#   BATCH          per-process train.batch_size override (default: the config's 8 / GPUS)
#   EXTRA_SET      more `--set key=value` overrides for every run and bench, space-separated (e.g. to shrink)
#   BENCH_STEPS, BENCH_WARMUP   `vitrain bench` sizes (default 20, 5; batch: the config's)
#   BENCH_EXTRA    more `vitrain bench` options (e.g. "--threads 2")
#   EVAL_WINDOWS   sliding windows per validation image in the estimate (default 2: ADE20K's 4:3 images at short
#                  side 512 with stride 480)
#   N_TRAIN, N_VAL the number of training / validation images (default: counted in DATA_DIR)
#   ESTIMATE_ONLY  1: print the estimate and stop
set -euo pipefail
usage="usage: $0 DATA_DIR [GPUS] [OUT_DIR]"
if [ $# -lt 1 ] || [ $# -gt 3 ]; then echo "$usage" >&2; exit 2; fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ADE=$1
[ -d "$ADE/ADEChallengeData2016" ] && ADE=$ADE/ADEChallengeData2016
[ -d "$ADE/images/training" ] || { echo "error: no '$ADE/images/training' (DATA_DIR: ADEChallengeData2016 or its parent)" >&2; exit 1; }
ADE=$(cd "$ADE" && pwd)
# yaml_get, epochs_done, bench_once, json_number, repro_setup
source "$ROOT/scripts/reproduce_lib.sh"
repro_setup ade20k paper_table4.tsv "${2:-}" "${3:-}" runs/table4
PRETRAINED=${PRETRAINED:-$ROOT/pretrained}
CONFIGS=${CONFIGS:-$(awk -F'\t' '!/^#/ && NF { print $1 }' "$PAPER_TSV")}

# The --set overrides shared by bench and train.
common_sets=()
for s in "${extra_set[@]}"; do common_sets+=(--set "$s"); done

# ---- 1. throughput and the estimate ----
n_train=${N_TRAIN:-$(find "$ADE/images/training" -type f | wc -l)}
n_val=${N_VAL:-$(find "$ADE/images/validation" -type f | wc -l)}
bench_args=(--steps "${BENCH_STEPS:-20}" --warmup "${BENCH_WARMUP:-5}" --device "$DEVICE")
[ -n "${BATCH:-}" ] && bench_args+=(--batch-size "$BATCH")
read -r -a bench_extra <<<"${BENCH_EXTRA:-}"

estimate=$OUT/estimate.tsv
printf 'config\tmodel\tattention\tepochs\ttrain_img_per_s\teval_img_per_s\tgpu_hours\n' >"$estimate"
for name in $CONFIGS; do
  yaml=$CONFIG_DIR/$name.yaml
  [ -f "$yaml" ] || { echo "error: no config '$yaml'" >&2; exit 1; }
  mkdir -p "$OUT/$name"
  model=$(yaml_get "$yaml" model.name)
  attn=$(yaml_get "$yaml" model.attention.type)+$(yaml_get "$yaml" model.decoder.type)
  epochs=${EPOCHS:-$(yaml_get "$yaml" train.epochs)}
  interval=$(yaml_get "$yaml" eval.interval)
  bench_once "$OUT/$name" --config "$yaml" "${common_sets[@]}" "${bench_args[@]}" "${bench_extra[@]}"
  line=$(cat "$OUT/$name/bench.json")
  ips=$(json_number "$line" train_img_per_s)
  eips=$(json_number "$line" infer_img_per_s)
  [ -n "$ips" ] || { echo "error: no train_img_per_s in $OUT/$name/bench.json" >&2; exit 1; }
  awk -v n="$name" -v m="$model" -v a="$attn" -v e="$epochs" -v iv="$interval" -v ips="$ips" -v eips="${eips:-0}" \
      -v imgs="$n_train" -v val="$n_val" -v win="${EVAL_WINDOWS:-2}" '
    BEGIN {
      evals = int(e / iv) + (e % iv != 0)
      h = e * imgs / ips / 3600
      if (eips > 0) h += evals * val * win / eips / 3600
      printf "%s\t%s\t%s\t%s\t%.1f\t%.1f\t%.4f\n", n, m, a, e, ips, eips, h
    }' >>"$estimate"
done
echo
echo "Estimated cost on this hardware ($n_train training and $n_val validation images, $DEVICE, img/s from vitrain bench):"
awk -F'\t' -v g="$GPUS" '
  NR == 1 { printf "%-18s %-24s %-13s %6s %9s %9s %9s\n", "config", "model", "attention", "epochs", "train/s", "eval/s", "GPU-h"; next }
  { printf "%-18s %-24s %-13s %6s %9.1f %9.1f %9.3f\n", $1, $2, $3, $4, $5, $6, $7; gh += $7 }
  END {
    printf "%-18s %-24s %-13s %6s %9s %9s %9.3f\n", "total", "", "", "", "", "", gh
    printf "wall-clock on %d GPU(s), each run data parallel over all of them: about %.3f h\n", g, gh / g
  }' "$estimate"
echo
[[ ${ESTIMATE_ONLY:-0} == 1 ]] && exit 0

# ---- 2. the runs ----
run_config() {  # name
  local name=$1 yaml=$CONFIG_DIR/$1.yaml run=$OUT/$1
  local epochs=${EPOCHS:-$(yaml_get "$yaml" train.epochs)}
  local done_epochs
  done_epochs=$(epochs_done "$run/metrics.jsonl" miou)
  if [ -f "$run/model.safetensors" ] && ((done_epochs >= epochs)); then
    echo "== $name: finished ($done_epochs epochs), skipped"
    return 0
  fi
  local batch=${BATCH:-}
  if [ -z "$batch" ] && ((GPUS > 1)); then
    local full
    full=$(yaml_get "$yaml" train.batch_size)
    ((full % GPUS == 0)) || { echo "error: $name: batch $full does not split over $GPUS GPUs; set BATCH" >&2; return 1; }
    batch=$((full / GPUS))
  fi
  local sets=(--set "data.data_dir=$ADE" --set "train.output=$run")
  if [[ $PRETRAINED == none ]]; then
    sets+=(--set 'model.initial_checkpoint=""')
  else
    local weights
    weights=$PRETRAINED/$(yaml_get "$yaml" model.name).safetensors
    [ -f "$weights" ] || { echo "error: $name: no backbone '$weights' (see the comment at the top of $0)" >&2; return 1; }
    sets+=(--set "model.initial_checkpoint=$weights")
  fi
  [ -n "${EPOCHS:-}" ] && sets+=(--set "train.epochs=$EPOCHS")
  [ -n "$batch" ] && sets+=(--set "train.batch_size=$batch")
  local train=(train --config "$yaml" "${sets[@]}" "${common_sets[@]}" --device "$DEVICE" --resume auto)
  local cmd
  if ((GPUS > 1)); then
    cmd=("$VITRAIN" launch -n "$GPUS" -- "${train[@]}")
  else
    cmd=("$VITRAIN" "${train[@]}")
  fi
  local state=starting
  [ -f "$run/last.safetensors" ] || [ -f "$run/recovery.safetensors" ] && state="resuming (epochs done: $done_epochs)"
  echo "== $name: $state on $GPUS × $DEVICE; log $run/console.log"
  "${cmd[@]}" >>"$run/console.log" 2>&1 || { echo "error: $name failed, see $run/console.log" >&2; return 1; }
}

for name in $CONFIGS; do run_config "$name" || exit 1; done

# ---- 3. the table ----
"$ROOT/scripts/collect_table4.sh" "$OUT"
cat "$OUT/table4.md"
