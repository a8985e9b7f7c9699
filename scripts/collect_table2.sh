#!/usr/bin/env bash
# Collects the Table 2 runs of scripts/reproduce_table2.sh into OUT_DIR/table2.md: per configuration our best
# top-1 over the evaluated epochs (the paper reports DeiT's "max accuracy" of the raw model), the best EMA top-1,
# the paper's top-1 and the difference, params and MACs (when `vitrain flops` exists), and the measured img/s.
#   scripts/collect_table2.sh OUT_DIR
# Reads OUT_DIR/<config>/metrics.jsonl (rows with "test_top1"), OUT_DIR/<config>/config.yaml (the run's resolved
# config, for `vitrain flops`; configs/imagenet/<config>.yaml without a run) and OUT_DIR/<config>/bench.json (the `vitrain bench` line reproduce_table2.sh
# saved). Runs work alone on finished (or unfinished) runs; a configuration without a run says "not run".
# Env: VITRAIN (the binary; default `vitrain` on PATH, else build/bin/vitrain), PAPER_TSV (the paper's numbers;
#      default configs/imagenet/paper_table2.tsv), TABLE (the table's number in the file name and title, default 2;
#      scripts/reproduce_table3.sh sets 3), CONFIG_DIR (where a config without a run is read; default
#      configs/imagenet).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$1
PAPER_TSV=${PAPER_TSV:-$ROOT/configs/imagenet/paper_table2.tsv}
VITRAIN=${VITRAIN:-$(command -v vitrain || echo "$ROOT/build/bin/vitrain")}
[ -f "$PAPER_TSV" ] || { echo "error: no paper table '$PAPER_TSV'" >&2; exit 1; }

source "$ROOT/scripts/reproduce_lib.sh"  # metric_stats, flops_of, two_decimals, json_number

# `vitrain flops` exists when its own help comes back (an unknown subcommand's --help prints the top-level help).
has_flops=0
if "$VITRAIN" flops --help 2>/dev/null | grep -q 'Usage:.* flops'; then has_flops=1; fi

TABLE=${TABLE:-2}
md=$OUT/table$TABLE.md
{
  echo "# Table $TABLE (ImageNet-1K top-1 %): our runs beside the paper"
  echo
  echo "Runs in \`$OUT\`. Ours: the best raw-model top-1 over the evaluated epochs (the paper's \"max accuracy\");"
  echo "EMA: the best EMA top-1. Δ = ours − paper. img/s: \`vitrain bench\` training throughput on one device."
  echo
  if ((has_flops)); then
    echo "| config | row | epochs | top-1 | EMA top-1 | paper top-1 | Δ | params | MACs | paper FLOPs | img/s |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
  else
    echo "| config | row | epochs | top-1 | EMA top-1 | paper top-1 | Δ | paper FLOPs | img/s |"
    echo "|---|---|---|---|---|---|---|---|---|"
  fi
  while IFS=$'\t' read -r name row paper _paper_params paper_flops _params; do
    [[ -z $name || $name == \#* ]] && continue
    dir=$OUT/$name
    read -r best _ ema _ epochs < <(metric_stats "$dir/metrics.jsonl" test_top1 test_top1 ema_top1)
    [ -f "$dir/metrics.jsonl" ] || epochs="not run"
    diff=$(awk -v a="$best" -v b="$paper" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.2f", a - b }')
    ips=-
    if [ -f "$dir/bench.json" ]; then
      v=$(json_number "$(cat "$dir/bench.json")" train_img_per_s)
      [ -n "$v" ] && ips=$(printf '%.0f' "$v")
    fi
    cols="| $name | $row | $epochs | $(two_decimals "$best") | $(two_decimals "$ema") | $paper | $diff |"
    if ((has_flops)); then
      pm="- -"
      cfg=$dir/config.yaml  # the run's resolved config; without a run, the paper-sized one
      [ -f "$cfg" ] || cfg=${CONFIG_DIR:-$ROOT/configs/imagenet}/$name.yaml
      [ -f "$cfg" ] && pm=$(flops_of "$cfg")
      read -r params macs <<<"$pm"
      cols="$cols $params | $macs |"
    fi
    echo "$cols ${paper_flops:--} | $ips |"
  done <"$PAPER_TSV"
} >"$md"
echo "wrote $md"
