# Shell functions shared by scripts/reproduce_table{2,4,5}.sh and scripts/collect_table{2,4,5}.sh (sourced, not run).

# The runs' common settings from a table script's GPUS and OUT_DIR arguments ($3, $4; $5: OUT_DIR's default):
# GPUS (checked), OUT (created, absolute), VITRAIN (exported), DEVICE (checked against GPUS), CONFIG_DIR
# (configs/$1), PAPER_TSV (default CONFIG_DIR/$2, exported) and the extra_set array from EXTRA_SET. Needs ROOT.
repro_setup() {
  GPUS=${3:-1}
  OUT=${4:-$5}
  [[ $GPUS =~ ^[1-9][0-9]*$ ]] || { echo "error: GPUS must be a positive integer, got '$GPUS'" >&2; exit 2; }
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)
  VITRAIN=${VITRAIN:-$(command -v vitrain || echo "$ROOT/build/bin/vitrain")}
  export VITRAIN
  DEVICE=${DEVICE:-cuda}
  [[ $DEVICE != cpu || $GPUS == 1 ]] || { echo "error: DEVICE=cpu runs one process: GPUS must be 1" >&2; exit 2; }
  CONFIG_DIR=$ROOT/configs/$1
  PAPER_TSV=${PAPER_TSV:-$CONFIG_DIR/$2}
  export PAPER_TSV
  read -r -a extra_set <<<"${EXTRA_SET:-}"
}

# The value of a dotted key (model.attention.type) in one of our configs: two-space indentation, no lists of maps.
yaml_get() {
  awk -v want="$2" '
    /^[[:space:]]*(#|$)/ { next }
    {
      match($0, /^ */); depth = RLENGTH / 2; line = substr($0, RLENGTH + 1)
      key = line; sub(/:.*/, "", key)
      val = substr(line, length(key) + 2); sub(/[[:space:]]+#.*/, "", val); gsub(/^[[:space:]]+|[[:space:]]+$/, "", val)
      path[depth] = key; p = path[0]
      for (i = 1; i <= depth; ++i) p = p "." path[i]
      if (p == want) { print val; exit }
    }' "$1"
}

# The last evaluated epoch in a run's metrics.jsonl (0 when none): the rows holding the metric key $2
# (test_top1, miou).
epochs_done() {
  [ -f "$1" ] || { echo 0; return; }
  awk -v key="\"$2\"" 'index($0, key) && match($0, /"epoch": *[0-9]+/) { e = substr($0, RSTART, RLENGTH); sub(/.*: */, "", e) }
       END { print e + 0 }' "$1"
}

# The numeric value of "key" in one JSON line ("" when absent or null).
json_number() { sed -n "s/.*\"$2\": *\\([-0-9.eE+]*\\).*/\\1/p" <<<"$1"; }

# Over the rows of a metrics.jsonl that hold "$2" (test_top1, miou): for each further key, its best (largest) and
# last value, then the last epoch: "best1 last1 best2 last2 ... epoch" ("-" for what is absent or no file).
metric_stats() {
  local file=$1 row=$2
  shift 2
  [ -f "$file" ] || { printf -- '- - %.0s' "$@"; echo "-"; return; }
  awk -v row="\"$row\"" -v keys="$*" '
    function num(line, key,   s) {
      if (!match(line, "\"" key "\": *[-0-9.eE+]+")) return ""
      s = substr(line, RSTART, RLENGTH); sub(/.*: */, "", s); return s
    }
    BEGIN { n = split(keys, k, " ") }
    index($0, row) {
      for (i = 1; i <= n; ++i) {
        v = num($0, k[i])
        if (v == "") continue
        if (best[i] == "" || v + 0 > best[i] + 0) best[i] = v
        last[i] = v
      }
      ep = num($0, "epoch"); if (ep != "") epoch = ep
    }
    END {
      for (i = 1; i <= n; ++i) printf "%s %s ", (best[i] == "" ? "-" : best[i]), (last[i] == "" ? "-" : last[i])
      print (epoch == "" ? "-" : epoch)
    }' "$file"
}

# "params MACs" of a config from `vitrain flops`'s total line ("params 22.05M  MACs 4.43G (all matmuls) / 4.30G
# (fvcore-style)": the all-matmul count), or "- -". Uses $VITRAIN.
flops_of() {
  local text
  text=$("$VITRAIN" flops --config "$1" 2>/dev/null) || { echo "- -"; return; }
  awk '/^params .* MACs / { print $2, $4; found = 1; exit } END { if (!found) print "- -" }' <<<"$text"
}

# A number with two decimals, or "-".
two_decimals() { if [ "$1" = "-" ]; then echo "-"; else printf '%.2f' "$1"; fi; }

# `$VITRAIN bench ARGS...` for the run folder $1, once: its JSON line is kept in $1/bench.json (the console in
# $1/bench.log), so a resumed reproduction does not measure again. Exits the script when the bench fails.
bench_once() {
  local dir=$1
  shift
  [ -s "$dir/bench.json" ] && return 0
  echo "bench $(basename "$dir"): $VITRAIN bench $*"
  "$VITRAIN" bench "$@" >"$dir/bench.log" 2>&1 ||
    { echo "error: bench failed for $(basename "$dir"), see $dir/bench.log" >&2; exit 1; }
  grep '^{' "$dir/bench.log" | tail -1 >"$dir/bench.json"
}
