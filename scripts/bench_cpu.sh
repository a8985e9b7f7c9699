#!/usr/bin/env bash
# CPU training throughput of the demo ViT (vit_micro, batch 128, synthetic data): ours vs PyTorch (Debian's
# python3-torch, installed here if missing) on the same machine in the same run, alternating, and the ratio.
#   scripts/bench_cpu.sh [threads] [steps]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
steps=${2:-30}
/usr/bin/python3 -c 'import torch' 2>/dev/null || {
  sudo_cmd=(); [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
}
[[ -x build/bin/bench_train ]] || bash scripts/build.sh
ours=(); peer=()
for round in 1 2 3; do
  o=$(build/bin/bench_train --threads "$threads" --steps "$steps" --warmup 5)
  p=$(/usr/bin/python3 scripts/bench_torch_cpu.py --threads "$threads" --steps "$steps" --warmup 5)
  echo "round $round: ours: $o"
  echo "round $round: peer: $p"
  ours+=("$(sed -E 's/.*: ([0-9.]+) img\/s.*/\1/' <<<"$o")")
  peer+=("$(sed -E 's/.*: ([0-9.]+) img\/s.*/\1/' <<<"$p")")
done
best() { printf '%s\n' "$@" | sort -g | tail -1; }
bo=$(best "${ours[@]}"); bp=$(best "${peer[@]}")
echo "best of 3, $threads threads: vitrain $bo img/s, torch $bp img/s, ratio $(awk -v a="$bo" -v b="$bp" 'BEGIN{printf "%.2f", a/b}')x"
