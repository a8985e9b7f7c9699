#!/usr/bin/env bash
# The README's side-by-side: dense vs MiTA vs MiTA + DWC on Fashion-MNIST with the demo's budget (same model,
# recipe, seed and epochs). Prints one summary line per kind; logs under runs/compare_*.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin/vitrain
cfg=configs/fashion_mnist_vit.yaml
declare -A kinds=(
  [dense]="--set model.attention.type=dense --set model.attention.dwc=false"
  [mita]="--set model.attention.dwc=false"
  [mita_dwc]=""
)
for kind in dense mita mita_dwc; do
  start=$(date +%s)
  # shellcheck disable=SC2086
  $bin train --config $cfg ${kinds[$kind]} --set train.output=runs/compare_$kind "$@" > runs/compare_$kind.log 2>&1
  secs=$(( $(date +%s) - start ))
  echo "$kind: $(grep -m1 'parameters' runs/compare_$kind.log | sed 's/.*: //') | $(grep '^test top-1' runs/compare_$kind.log) | $(grep '^training speed' runs/compare_$kind.log) | wall ${secs}s"
done
