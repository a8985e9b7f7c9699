#!/usr/bin/env bash
# Fails naming every tracked C++/CUDA source that clang-format 14 would change (the files of scripts/format.sh,
# which fixes them). Usage: check_format.sh [ROOT]   (ROOT: a git checkout with a .clang-format, default this one)
# Without clang-format 14 or outside a git checkout it fails when CI=true and is skipped (exit 77) otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "${1:-$here/..}" && pwd)
source "$here/lib/format_sources.sh"

unavailable() {
  if [[ "${CI:-}" == true ]]; then
    echo "check_format: FAILED: $1; CI must check the format" >&2
    exit 1
  fi
  echo "check_format: skipped: $1"
  exit 77
}
find_clang_format || unavailable "$CLANG_FORMAT_PROBLEM"
git -C "$root" rev-parse --is-inside-work-tree > /dev/null 2>&1 || unavailable "$root is not a git checkout"
[[ -f "$root/.clang-format" ]] || { echo "check_format: $root/.clang-format not found" >&2; exit 2; }

cd "$root"
checked=$(format_sources "$root" | tr -cd '\0' | wc -c)
status=0
report=$(format_sources "$root" | xargs -0 -r -n 100 "$CLANG_FORMAT" --dry-run -Werror --style=file 2>&1) ||
  status=$?
# Each change clang-format wants reads "FILE:LINE:COL: error: code should be clang-formatted [...]".
unformatted=$(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<< "$report" | sort -u)
if [[ -z "$unformatted" ]]; then
  if ((status != 0)); then
    echo "check_format: $CLANG_FORMAT failed:" >&2
    echo "$report" | head -20 >&2
    exit 2
  fi
  echo "check_format: all $checked C++/CUDA sources are formatted ($CLANG_FORMAT)"
  exit 0
fi
echo "check_format: $(wc -l <<< "$unformatted") of $checked C++/CUDA sources are not formatted; run scripts/format.sh:" >&2
sed 's/^/  /' <<< "$unformatted" >&2
exit 1
