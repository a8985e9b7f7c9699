#!/usr/bin/env bash
# Decode + train transform (RandomResizedCrop 224 bicubic, flip, normalize) per core, ours vs Pillow + numpy on
# the same files, alternating for ROUNDS rounds so
# both see the same machine load; prints each round's ratio and their median. Usage: tools/bench_data_compare.sh BUILD_DIR IMAGE_FOLDER [ROUNDS]
set -euo pipefail
ratios=()
build=$1 folder=$2 rounds=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
for r in $(seq "$rounds"); do
  ours=$("$build/bin/bench_data" "$folder" --train-only | awk '/^RRC\+flip\+normalize/ {print $4}')
  pil=$(/usr/bin/python3 "$here/bench_data_pil.py" "$folder" | awk '{for (i = 1; i <= NF; ++i) if ($i == "img/cpu-s") print $(i - 1)}')
  ratio=$(awk -v a="$ours" -v b="$pil" 'BEGIN {printf "%.2f", a / b}')
  echo "round $r: vitrain $ours img/cpu-s, Pillow $pil img/cpu-s, ratio ${ratio}x (load $(cut -d' ' -f1 /proc/loadavg))"
  ratios+=("$ratio")
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{r[NR] = $1} END {printf "median ratio %.2fx (min %.2fx, max %.2fx) over %d rounds\n", (NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2), r[1], r[NR], NR}'
