#!/usr/bin/env bash
# The proxy study of issue 10 (REPRODUCTION.md): every attention variant on the Fashion-MNIST patch-2 proxy
# (configs/proxy/fmnist_p2_mita.yaml: 197 tokens, 14x14 grid), SEEDS seeds each, then a table of the best test
# top-1 (mean ± std over the seeds) beside the paper's ImageNet delta to its baseline (Table 2 Tiny, Appendix A).
# Finished runs (model.safetensors present) are skipped, so the study can be spread over several sessions.
# Usage: scripts/proxy_study.sh DATA_DIR OUT_DIR
# Env: VARIANTS (default: all below), SEEDS ("0 1 2"), EPOCHS (10), DEVICE (cuda:0), VITRAIN.
# Not available as variants yet: random and learned landmarks.
set -euo pipefail
data=${1:?usage: scripts/proxy_study.sh DATA_DIR OUT_DIR}
out=${2:?usage: scripts/proxy_study.sh DATA_DIR OUT_DIR}
vitrain=${VITRAIN:-$(command -v vitrain || echo build/bin/vitrain)}
seeds=${SEEDS:-0 1 2} epochs=${EPOCHS:-10} device=${DEVICE:-cuda:0}
cfg=configs/proxy/fmnist_p2_mita.yaml

# name | --set overrides | the paper's ImageNet top-1 delta against its baseline (Tiny), "-" when none
variants=$(cat <<'V'
dense|model.attention.type=dense|+1.1 (72.2)
mita|model.attention.type=mita|0 (71.1)
mita_dwc|model.attention.type=mita model.attention.dwc=true|+2.3 (73.4)
mita_dwc_gate|model.attention.type=mita model.attention.dwc=true model.attention.gate=true|-
agent|model.attention.type=agent|-0.8 (70.3)
agent_bias|model.attention.type=agent_bias|0 (71.1)
linear|model.attention.type=linear|-3.1 (68.0)
route_only|model.attention.type=mita_route|-0.3 (70.8)
compress_only|model.attention.type=mita_compress|-0.8 (70.3)
pool_1d|model.attention.type=mita model.attention.landmark_pool=sequence|-0.7 (70.4)
mk_16_25|model.attention.type=mita model.attention.m=16 model.attention.k=25|-0.1 (71.0)
mk_25_16|model.attention.type=mita model.attention.m=25 model.attention.k=16|-0.6 (70.5)
mk_25_36|model.attention.type=mita model.attention.m=25 model.attention.k=36|+0.6 (71.7)
mk_36_25|model.attention.type=mita model.attention.m=36 model.attention.k=25|+0.1 (71.2)
V
)
wanted=${VARIANTS:-$(echo "$variants" | cut -d'|' -f1 | tr '\n' ' ')}

mkdir -p "$out"
while IFS='|' read -r name sets paper; do
  [[ " $wanted " == *" $name "* ]] || continue
  for seed in $seeds; do
    dir=$out/$name/seed$seed
    if [[ -f $dir/model.safetensors ]]; then echo "== $name seed $seed: done"; continue; fi
    args=(train --config "$cfg" --device "$device" --set data.data_dir="$data" --set train.epochs="$epochs"
          --set train.seed="$seed" --set train.output="$dir" --set train.resume=auto)
    for s in $sets; do args+=(--set "$s"); done
    echo "== $name seed $seed"
    "$vitrain" "${args[@]}" 2>&1 | grep -E "training:|error" | tail -1
  done
done <<< "$variants"

# The table: best test top-1 per run (max over evaluations), mean ± sample std over the finished seeds.
stats() {  # variant -> "mean std n", nothing when no seed has finished
  local m best=()
  for m in "$out/$1"/seed*/metrics.jsonl; do
    [[ -f $m && -f $(dirname "$m")/model.safetensors ]] || continue
    best+=("$(grep -o '"test_top1": *[0-9.]*' "$m" | awk -F: '{print $2}' | sort -g | tail -1)")
  done
  ((${#best[@]})) || return 0
  printf '%s\n' "${best[@]}" | awk '{s += $1; q += $1 * $1; n++} END {m = s / n;
    v = n > 1 ? (q - n * m * m) / (n - 1) : 0; printf "%.2f %.2f %d\n", m, (v > 0 ? sqrt(v) : 0), n}'
}
read -r mita_mean _ _ <<< "$(stats mita)" || true
{
  echo "| variant | seeds | best top-1 mean ± std | Δ vs mita | paper (ImageNet, Tiny): Δ vs MiTA (top-1) |"
  echo "|---|---|---|---|---|"
  while IFS='|' read -r name _ paper; do
    read -r mean std n <<< "$(stats "$name")" || continue
    [[ -n ${mean:-} ]] || continue
    delta=-
    [[ -n ${mita_mean:-} ]] && delta=$(awk -v a="$mean" -v b="$mita_mean" 'BEGIN {printf "%+.2f", a - b}')
    echo "| $name | $n | $mean ± $std | $delta | $paper |"
  done <<< "$variants"
} > "$out/proxy_study.md"
cat "$out/proxy_study.md"
