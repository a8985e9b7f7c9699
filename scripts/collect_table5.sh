#!/usr/bin/env bash
# Collects the Table 5 runs of scripts/reproduce_table5.sh into OUT_DIR/table5.md: per row the test accuracy of the
# best validation model (LRA's protocol: the last "best_test_top1" of metrics.jsonl), the training speed in steps/s
# (the mean of the progress rows' sequences/s over the global batch, the first row left out as warm-up) and the
# training hours (steps / steps/s, evaluation not counted), beside the paper's numbers with the difference; then per
# attention kind the average accuracy over the five tasks and the total hours beside the paper's.
#   scripts/collect_table5.sh OUT_DIR
# Reads OUT_DIR/<config>/metrics.jsonl and OUT_DIR/<config>/config.yaml (the run's resolved config, for the global
# batch). Works on finished or unfinished runs; a row without a run says "not run".
# Env: PAPER_TSV (the paper's numbers; default configs/lra/paper_table5.tsv).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$1
PAPER_TSV=${PAPER_TSV:-$ROOT/configs/lra/paper_table5.tsv}
[ -f "$PAPER_TSV" ] || { echo "error: no paper table '$PAPER_TSV'" >&2; exit 1; }

source "$ROOT/scripts/reproduce_lib.sh"  # yaml_get, metric_stats, two_decimals

# "steps accuracy steps_per_s hours" of one run ("-" for what is missing).
run_numbers() {
  local dir=$1 batch
  [ -f "$dir/metrics.jsonl" ] || { echo "- - - -"; return; }
  batch=$(yaml_get "$dir/config.yaml" train.global_batch_size 2>/dev/null || true)
  [[ -z $batch || $batch == 0 ]] && batch=$(yaml_get "$dir/config.yaml" train.batch_size 2>/dev/null || true)
  read -r steps _ _ < <(metric_stats "$dir/metrics.jsonl" step step)
  read -r _ accuracy _ < <(metric_stats "$dir/metrics.jsonl" best_test_top1 best_test_top1)
  awk -v steps="$steps" -v acc="$accuracy" -v batch="${batch:--}" '
    function num(line, key,   s) {
      if (!match(line, "\"" key "\": *[-0-9.eE+]+")) return ""
      s = substr(line, RSTART, RLENGTH); sub(/.*: */, "", s); return s
    }
    /"img_per_s"/ { v = num($0, "img_per_s"); if (v != "") { ++rows; if (rows > 1) { sum += v; ++used } else first = v } }
    END {
      if (!used && rows) { sum = first; used = 1 }
      if (!used || batch == "-" || batch + 0 <= 0 || steps == "-") { print steps, acc, "-", "-"; exit }
      sps = sum / used / batch
      printf "%s %s %.2f %.3f\n", steps, acc, sps, steps / sps / 3600
    }' "$dir/metrics.jsonl"
}

md=$OUT/table5.md
{
  echo "# Table 5 (Long Range Arena): our runs beside the paper"
  echo
  echo "Runs in \`$OUT\`. Accuracy: test top-1 (%) of the best validation model. steps/s: training updates per"
  echo "second (mean over the progress rows); hours: steps / steps/s, evaluation not counted. Δ = ours − paper."
  echo
  echo "| config | task | kind | steps | accuracy | paper accuracy | Δ | steps/s | paper steps/s | hours |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  declare -A acc_sum acc_n hours_sum
  while IFS=$'\t' read -r name task kind paper_acc paper_sps; do
    [[ -z $name || $name == \#* || $name == average ]] && continue
    read -r steps acc sps hours < <(run_numbers "$OUT/$name")
    [ -f "$OUT/$name/metrics.jsonl" ] || steps="not run"
    diff=$(awk -v a="$acc" -v b="$paper_acc" 'BEGIN { if (a == "-" || b == "-") print "-"; else printf "%+.2f", a - b }')
    echo "| $name | $task | $kind | $steps | $(two_decimals "$acc") | $paper_acc | $diff | $sps | $paper_sps | $hours |"
    if [[ $acc != - ]]; then
      acc_sum[$kind]=$(awk -v s="${acc_sum[$kind]:-0}" -v a="$acc" 'BEGIN { print s + a }')
      acc_n[$kind]=$((${acc_n[$kind]:-0} + 1))
    fi
    [[ $hours != - ]] && hours_sum[$kind]=$(awk -v s="${hours_sum[$kind]:-0}" -v h="$hours" 'BEGIN { print s + h }')
  done <"$PAPER_TSV"
  echo
  echo "Per kind: the average accuracy over the tasks that ran (all five for a complete row) and the total hours."
  echo
  echo "| kind | tasks | average accuracy | paper average | Δ | hours | paper hours |"
  echo "|---|---|---|---|---|---|---|"
  while IFS=$'\t' read -r first kind paper_acc paper_hours; do
    [[ $first == average ]] || continue
    n=${acc_n[$kind]:-0}
    avg=-
    ((n > 0)) && avg=$(awk -v s="${acc_sum[$kind]}" -v n="$n" 'BEGIN { printf "%.2f", s / n }')
    diff=$(awk -v a="$avg" -v b="$paper_acc" -v n="$n" 'BEGIN { if (a == "-" || n < 5) print "-"; else printf "%+.2f", a - b }')
    hours=${hours_sum[$kind]:--}
    [[ $hours != - ]] && hours=$(printf '%.2f' "$hours")
    echo "| $kind | $n | $avg | $paper_acc | $diff | $hours | $paper_hours |"
  done <"$PAPER_TSV"
} >"$md"
echo "wrote $md"
