#!/usr/bin/env bash
# Collects the Table 4 runs of scripts/reproduce_table4.sh into OUT_DIR/table4.md: per configuration our
# single-scale mIoU of the final evaluation (the last checkpoint's, what Segmenter reports), the best over the
# evaluations beside it, the paper's mIoU and the difference (final − paper), params and MACs from `vitrain flops`
# (backbone + decoder at the crop), the paper's FLOPs, and the measured training / evaluation-window throughput.
#   scripts/collect_table4.sh OUT_DIR
# Reads OUT_DIR/<config>/metrics.jsonl (rows with "miou"), OUT_DIR/<config>/config.yaml (the run's resolved config,
# for `vitrain flops`; configs/ade20k/<config>.yaml without a run) and OUT_DIR/<config>/bench.json. Works on
# finished or unfinished runs; a configuration without a run says "not run".
# Env: VITRAIN (the binary; default `vitrain` on PATH, else build/bin/vitrain), PAPER_TSV (the paper's numbers;
#      default configs/ade20k/paper_table4.tsv).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$1
PAPER_TSV=${PAPER_TSV:-$ROOT/configs/ade20k/paper_table4.tsv}
VITRAIN=${VITRAIN:-$(command -v vitrain || echo "$ROOT/build/bin/vitrain")}
[ -f "$PAPER_TSV" ] || { echo "error: no paper table '$PAPER_TSV'" >&2; exit 1; }

source "$ROOT/scripts/reproduce_lib.sh"  # metric_stats, flops_of, two_decimals, json_number

# A throughput from bench.json with one decimal, or "-".
ips_of() {
  local v=""
  [ -f "$1" ] && v=$(json_number "$(cat "$1")" "$2")
  if [ -n "$v" ]; then printf '%.1f' "$v"; else echo "-"; fi
}

md=$OUT/table4.md
{
  echo "# Table 4 (ADE20K val mIoU %, single scale): our runs beside the paper"
  echo
  echo "Runs in \`$OUT\`. mIoU: the final evaluation (the last checkpoint, as Segmenter reports; of an unfinished run,"
  echo "its latest); best: the best evaluation (the best checkpoint). Δ = ours (final) − paper."
  echo "MACs: \`vitrain flops\` for backbone + decoder at the crop size (its convention, see docs); the paper's FLOPs"
  echo "are its own count. img/s: \`vitrain bench --config\` on one device (train steps; eval windows)."
  echo
  echo "| config | row | epochs | mIoU (final) | best | paper mIoU | Δ | params | MACs | paper FLOPs | train img/s | eval img/s |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  while IFS=$'\t' read -r name row paper paper_flops; do
    [[ -z $name || $name == \#* ]] && continue
    dir=$OUT/$name
    read -r best last epochs < <(metric_stats "$dir/metrics.jsonl" miou miou)
    [ -f "$dir/metrics.jsonl" ] || epochs="not run"
    diff=$(awk -v a="$last" -v b="$paper" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.2f", a - b }')
    cfg=$dir/config.yaml  # the run's resolved config; without a run, the paper-sized one
    [ -f "$cfg" ] || cfg=$ROOT/configs/ade20k/$name.yaml
    pm="- -"
    [ -f "$cfg" ] && pm=$(flops_of "$cfg")
    read -r params macs <<<"$pm"
    echo "| $name | $row | $epochs | $(two_decimals "$last") | $(two_decimals "$best") | $paper | $diff | $params | $macs |" \
         "$paper_flops | $(ips_of "$dir/bench.json" train_img_per_s) | $(ips_of "$dir/bench.json" infer_img_per_s) |"
  done <"$PAPER_TSV"
} >"$md"
echo "wrote $md"
