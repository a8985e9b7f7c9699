#!/usr/bin/env bash
# Reproduces the MiTA paper's Table 7 (Appendix C): timm's ImageNet-21K ViT-T/S/B/L with every attention kept dense or
# swapped to MiTA, Agent-49 or linear attention, fine-tuned 50 epochs on ImageNet-1K: scripts/reproduce_table2.sh run
# over the rows of configs/finetune/paper_table7.tsv (throughput and GPU-hour estimate, the runs, resumable), then
# collected beside the paper's numbers into OUT_DIR/table7.md.
#   scripts/reproduce_table7.sh DATA_DIR GPUS [OUT_DIR]      (default OUT_DIR: runs/table7)
# Each config starts from model.initial_checkpoint, pretrained/<arch>.augreg_in21k.safetensors (relative to the
# directory the script runs in); REPRODUCTION.md shows how to write them from timm. The script stops before any run
# when one that a selected config needs is missing. The env knobs are reproduce_table2.sh's (CONFIGS, DEVICE,
# EPOCHS, BATCH, EXTRA_SET, BENCH_*, N_TRAIN, ESTIMATE_ONLY, VITRAIN).
set -euo pipefail
usage="usage: $0 DATA_DIR GPUS [OUT_DIR]"
if [ $# -lt 2 ] || [ $# -gt 3 ]; then echo "$usage" >&2; exit 2; fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/reproduce_lib.sh"  # yaml_get
export CONFIG_SET=finetune TABLE=7 PAPER_TSV=${PAPER_TSV:-$ROOT/configs/finetune/paper_table7.tsv}
configs=${CONFIGS:-$(awk -F'\t' '!/^#/ && NF { print $1 }' "$PAPER_TSV")}
if [[ ${ESTIMATE_ONLY:-0} != 1 ]]; then
  missing=0
  for name in $configs; do
    yaml=$ROOT/configs/finetune/$name.yaml
    [ -f "$yaml" ] || { echo "error: no config '$yaml'" >&2; exit 1; }
    ckpt=$(yaml_get "$yaml" model.initial_checkpoint)
    if [ -n "$ckpt" ] && [ ! -f "$ckpt" ]; then
      echo "error: $name needs its pretrained weights '$ckpt' (model.initial_checkpoint); REPRODUCTION.md, Table 7, shows how to write them" >&2
      missing=1
    fi
  done
  ((missing == 0)) || exit 1
fi
exec "$ROOT/scripts/reproduce_table2.sh" "$1" "$2" "${3:-runs/table7}"
