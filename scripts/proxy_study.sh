#!/usr/bin/env bash
# The proxy study (REPRODUCTION.md): every attention variant on the Fashion-MNIST patch-2 proxy
# (configs/proxy/fmnist_p2_mita.yaml: 197 tokens, 14x14 grid), SEEDS seeds each, then a table of the best test
# top-1 (mean ± std over the seeds) beside the paper's ImageNet delta to its baseline (Table 2 Tiny, Appendix A).
# A run is done when OUT_DIR/<variant>/seed<s>/model.safetensors exists or when its metrics are in the record
# (RECORD, default docs/figures/proxy/study/<variant>/seed<s>/metrics.jsonl: the finished runs' metrics kept in the
# repository, so the study can be spread over sessions and machines); done runs are skipped, and every run that
# finishes here has its metrics copied into the record. The table is computed from the record.
# Usage: scripts/proxy_study.sh DATA_DIR OUT_DIR
# Writes OUT_DIR/proxy_study.{md,csv,png} and the (m, k) grid OUT_DIR/mk_grid.{csv,png}.
# Env: VARIANTS (default: all below), SEEDS ("0 1 2"), EPOCHS (10), DEVICES ("cuda:0"), JOBS (runs at a time,
#      spread round-robin over DEVICES; default: one per device), DEADLINE (seconds after which no run starts;
#      0: none), EXTRA_SET (more --set overrides for every run, e.g. a CI-sized model), RECORD, VITRAIN,
#      PLOT_DOTS (default: beside VITRAIN; draws OUT_DIR/proxy_study.png from OUT_DIR/proxy_study.csv), MPS (1:
#      start the CUDA MPS daemon first, so that the runs sharing a GPU run their kernels side by side instead of
#      time-sliced; falls back to no MPS when a CUDA check fails under it), PLOT_HEATMAP (default: beside VITRAIN).
# tests/e2e/test_proxy_study.cpp runs it CI-sized on the CPU.
# Not a variant: learned landmarks.
set -euo pipefail
data=${1:?usage: scripts/proxy_study.sh DATA_DIR OUT_DIR}
out=${2:?usage: scripts/proxy_study.sh DATA_DIR OUT_DIR}
vitrain=${VITRAIN:-$(command -v vitrain || echo build/bin/vitrain)}
seeds=${SEEDS:-0 1 2} epochs=${EPOCHS:-10}
read -r -a devices <<< "${DEVICES:-${DEVICE:-cuda:0}}"
jobs=${JOBS:-${#devices[@]}} deadline=${DEADLINE:-0}
record=${RECORD:-docs/figures/proxy/study}
cfg=configs/proxy/fmnist_p2_mita.yaml
start=$(date +%s)

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
random_landmarks|model.attention.type=mita model.attention.landmark_pool=random|-0.5 (70.6)
mk_16_25|model.attention.type=mita model.attention.m=16 model.attention.k=25|-0.1 (71.0)
mk_25_16|model.attention.type=mita model.attention.m=25 model.attention.k=16|-0.6 (70.5)
mk_25_36|model.attention.type=mita model.attention.m=25 model.attention.k=36|+0.6 (71.7)
mk_36_25|model.attention.type=mita model.attention.m=36 model.attention.k=25|+0.1 (71.2)
mk_16_16|model.attention.type=mita model.attention.m=16 model.attention.k=16|-
mk_16_36|model.attention.type=mita model.attention.m=16 model.attention.k=36|-
mk_36_16|model.attention.type=mita model.attention.m=36 model.attention.k=16|-
mk_36_36|model.attention.type=mita model.attention.m=36 model.attention.k=36|-
V
)
wanted=${VARIANTS:-$(echo "$variants" | cut -d'|' -f1 | tr '\n' ' ')}

mkdir -p "$out" "$record"
if [[ ${MPS:-0} == 1 ]]; then
  export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/vt-mps/pipe}
  export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/vt-mps/log}
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d 2>/dev/null || true  # fails when already running
  if "$vitrain" bench --model deit_tiny_patch16_224 --batch-size 8 --steps 1 --warmup 0 --device "${devices[0]}" \
       >/dev/null 2>&1; then
    echo "== MPS: on (servers: $(echo get_server_list | nvidia-cuda-mps-control 2>/dev/null | tr '\n' ' '))"
  else
    echo quit | nvidia-cuda-mps-control 2>/dev/null || true
    echo "== MPS: a CUDA check failed under it; running without"
  fi
fi
todo=()  # "name|sets|seed", seed-major so that a partial study has whole seeds
for seed in $seeds; do
  while IFS='|' read -r name sets _; do
    [[ " $wanted " == *" $name "* ]] || continue
    if [[ -f $out/$name/seed$seed/model.safetensors || -f $record/$name/seed$seed/metrics.jsonl ]]; then
      echo "== $name seed $seed: done"
      continue
    fi
    todo+=("$name|$sets|$seed")
  done <<< "$variants"
done

worker() {  # worker index: runs todo[i], todo[i + jobs], ... on devices[i % #devices]
  local i=$1 device=${devices[$(($1 % ${#devices[@]}))]} name sets seed dir
  for ((j = i; j < ${#todo[@]}; j += jobs)); do
    if ((deadline > 0 && $(date +%s) - start > deadline)); then echo "== worker $i: deadline, stopping"; return; fi
    IFS='|' read -r name sets seed <<< "${todo[j]}"
    dir=$out/$name/seed$seed
    local args=(train --config "$cfg" --device "$device" --set data.data_dir="$data" --set train.epochs="$epochs"
                --set train.seed="$seed" --set train.output="$dir" --set train.resume=auto)
    for s in $sets ${EXTRA_SET:-}; do args+=(--set "$s"); done
    echo "== $name seed $seed on $device: $("$vitrain" "${args[@]}" 2>&1 | grep -E "training:|error" | tail -1)"
    if [[ -f $dir/model.safetensors ]]; then
      mkdir -p "$record/$name/seed$seed"
      cp "$dir/metrics.jsonl" "$record/$name/seed$seed/metrics.jsonl"
    fi
  done
}
for ((w = 0; w < jobs; ++w)); do worker "$w" & done
wait

# The table: best test top-1 per run (max over evaluations), mean ± sample std over the finished seeds.
stats() {  # variant -> "mean std n", nothing when no seed has finished
  local m best=()
  for m in "$record/$1"/seed*/metrics.jsonl; do
    [[ -f $m ]] || continue
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

# The same as a dot chart (mean ± std, the dashed line at MiTA's mean) when the plot_dots tool is there.
label() {  # variant -> the name REPRODUCTION.md's table gives it
  case $1 in
    mita) echo "MiTA" ;; mita_dwc) echo "MiTA + DWC" ;; mita_dwc_gate) echo "MiTA + DWC + Gate" ;;
    agent) echo "Agent" ;; agent_bias) echo "Agent + bias" ;; route_only) echo "route-only" ;;
    compress_only) echo "compress-only" ;; pool_1d) echo "landmarks: 1-D pooling" ;;
    random_landmarks) echo "landmarks: random tokens" ;;
    mk_*) local mk=${1#mk_}; echo "(m, k) = (${mk%_*}, ${mk#*_})" ;;
    *) echo "${1//_/ }" ;;
  esac
}
{
  echo "label,mean,std,seeds"
  while IFS='|' read -r name _ _; do
    read -r mean std n <<< "$(stats "$name")" || continue
    [[ -n ${mean:-} ]] && echo "\"$(label "$name")\",$mean,$std,$n"
  done <<< "$variants"
} > "$out/proxy_study.csv"
plot_dots=${PLOT_DOTS:-$(dirname "$vitrain")/plot_dots}
if [[ -x $plot_dots ]]; then
  "$plot_dots" "$out/proxy_study.csv" "$out/proxy_study.png" \
    --title "Proxy study: best test top-1 (mean ± std over seeds; dashed: MiTA)" \
    --x-title "best test top-1 (%)" ${mita_mean:+--reference "$mita_mean"}
fi

# Figure 6 on the proxy: the (m, k) grid of the mk_* variants with MiTA's (25, 25), mean best top-1 over the seeds
# each cell has, as OUT_DIR/mk_grid.csv (sorted by m, then k: the heat map's order) and mk_grid.png.
{
  echo "m,k,top1,seeds"
  while IFS='|' read -r name _ _; do
    case $name in mita) mk=25_25 ;; mk_*) mk=${name#mk_} ;; *) continue ;; esac
    read -r mean _ n <<< "$(stats "$name")" || continue
    [[ -n ${mean:-} ]] || continue  # (not `&& echo`: under pipefail the loop's last status would end the script)
    echo "${mk%_*},${mk#*_},$mean,$n"
  done <<< "$variants" | sort -t, -k1,1n -k2,2n
} > "$out/mk_grid.csv"
plot_heatmap=${PLOT_HEATMAP:-$(dirname "$vitrain")/plot_heatmap}
if [[ -x $plot_heatmap ]] && (($(wc -l < "$out/mk_grid.csv") > 1)); then
  "$plot_heatmap" "$out/mk_grid.csv" "$out/mk_grid.png" --rows m --cols k --value top1 --outline 25,25 \
    --title "Proxy: best test top-1 by landmarks m and keys k (mean over the seeds run)" \
    --row-title "landmarks (experts) m" --col-title "keys per expert k" --value-title "best test top-1 (%)"
fi
