#!/usr/bin/env bash
# Reproduces the MiTA paper's Table 3 (ViT-5-S, MiTA-ViT-5-S, MiTA-ViT-5-S + DWC): scripts/reproduce_table2.sh run
# over the rows of configs/imagenet/paper_table3.tsv (throughput and GPU-hour estimate, the runs, resumable), then
# collected beside the paper's numbers into OUT_DIR/table3.md.
#   scripts/reproduce_table3.sh DATA_DIR GPUS [OUT_DIR]      (default OUT_DIR: runs/table3)
# The env knobs are reproduce_table2.sh's (CONFIGS, DEVICE, EPOCHS, BATCH, EXTRA_SET, BENCH_*, N_TRAIN,
# ESTIMATE_ONLY, VITRAIN). The configs' recipe departs from the official one where vitrain lacks a part (LAMB,
# BCE loss, 3-Augment): their comments say how.
set -euo pipefail
usage="usage: $0 DATA_DIR GPUS [OUT_DIR]"
if [ $# -lt 2 ] || [ $# -gt 3 ]; then echo "$usage" >&2; exit 2; fi
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PAPER_TSV=${PAPER_TSV:-$ROOT/configs/imagenet/paper_table3.tsv} TABLE=3
exec "$ROOT/scripts/reproduce_table2.sh" "$1" "$2" "${3:-runs/table3}"
