#!/usr/bin/env bash
# Reproduces the MiTA paper's Table 5 (Long Range Arena): every configs/lra/*.yaml row (ListOps, Text, Retrieval,
# Image, Pathfinder × dense, MiTA, route-only MiTA, Agent) trained on the LRA data under DATA_DIR, then collected
# beside the paper's numbers into OUT_DIR/table5.md (scripts/collect_table5.sh).
#   scripts/reproduce_table5.sh DATA_DIR [GPUS] [OUT_DIR]      (GPUS default 1, OUT_DIR default runs/table5)
# DATA_DIR holds the tasks as the LRA release lays them out (listops-1000/, aclImdb/, tsv_data/,
# cifar-10-batches-bin/, pathfinder32/; `vitrain data make-lra` generates ListOps and Pathfinder). Each config trains
# into OUT_DIR/<config>/ (GPUS > 1: `vitrain launch -n GPUS`, the config's global batch divided over the GPUs),
# resuming a run that has a checkpoint and skipping a finished one, so rerunning the command continues.
# Env knobs (defaults: the paper's recipe on the GPU):
#   VITRAIN     the binary (default `vitrain` on PATH, else build/bin/vitrain)
#   CONFIGS     config names to run (default: all 20 of configs/lra/paper_table5.tsv)
#   DEVICE      train device (default: cuda; "cpu" for the CI-sized mode, GPUS must then be 1)
#   EPOCHS      train.epochs override (default: the config's, i.e. the recipe's steps / data.updates_per_epoch)
#   EXTRA_SET   more `--set key=value` overrides for every run, space-separated (e.g. to shrink the models)
set -euo pipefail
usage="usage: $0 DATA_DIR [GPUS] [OUT_DIR]"
if [ $# -lt 1 ] || [ $# -gt 3 ]; then echo "$usage" >&2; exit 2; fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -d "$1" ] || { echo "error: no data folder '$1'" >&2; exit 1; }
DATA=$(cd "$1" && pwd)
# yaml_get, epochs_done, repro_setup
source "$ROOT/scripts/reproduce_lib.sh"
repro_setup lra paper_table5.tsv "${2:-}" "${3:-}" runs/table5
CONFIGS=${CONFIGS:-$(awk -F'\t' '!/^#/ && NF && $1 != "average" { print $1 }' "$PAPER_TSV")}

for name in $CONFIGS; do
  yaml=$CONFIG_DIR/$name.yaml
  [ -f "$yaml" ] || { echo "error: no config '$yaml'" >&2; exit 1; }
  run=$OUT/$name
  mkdir -p "$run"
  epochs=${EPOCHS:-$(yaml_get "$yaml" train.epochs)}
  done_epochs=$(epochs_done "$run/metrics.jsonl" val_top1)
  if [ -f "$run/model.safetensors" ] && ((done_epochs >= epochs)); then
    echo "== $name: finished ($done_epochs epochs), skipped"
    continue
  fi
  sets=(--set "data.data_dir=$DATA" --set "train.output=$run")
  [ -n "${EPOCHS:-}" ] && sets+=(--set "train.epochs=$EPOCHS")
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

"$ROOT/scripts/collect_table5.sh" "$OUT"
cat "$OUT/table5.md"
