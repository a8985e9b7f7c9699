# Shell functions shared by scripts/reproduce_table{2,4}.sh and scripts/collect_table{2,4}.sh (sourced, not run).

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
