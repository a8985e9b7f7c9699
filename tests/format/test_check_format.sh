#!/usr/bin/env bash
# Tests of scripts/check_format.sh and scripts/format.sh on a scratch git checkout holding copies of both scripts
# and of .clang-format: the check names the unformatted tracked sources only, format.sh fixes exactly those, and
# a missing clang-format fails under CI=true and is a skip otherwise.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/scripts/lib/format_sources.sh"
if ! find_clang_format; then
  [[ "${CI:-}" == true ]] && { echo "test_check_format: FAILED: $CLANG_FORMAT_PROBLEM" >&2; exit 1; }
  echo "test_check_format: skipped: $CLANG_FORMAT_PROBLEM"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
expect() {  # expect NAME EXPECTED ACTUAL
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else printf 'FAIL %s\n  expected: %s\n  actual:   %s\n' "$1" "$2" "$3"; failures=$((failures + 1)); fi
}

scratch=$tmp/checkout
mkdir -p "$scratch/scripts/lib" "$scratch/src"
cp "$repo/.clang-format" "$scratch/"
cp "$repo/scripts/format.sh" "$repo/scripts/check_format.sh" "$scratch/scripts/"
cp "$repo/scripts/lib/format_sources.sh" "$scratch/scripts/lib/"
printf 'int twice(int x) { return 2 * x; }\n' > "$scratch/src/formatted.cpp"
printf '__global__ void k(float* x) { x[threadIdx.x] = 0; }\nvoid launch(float* x) {  k<<<1,   32>>>(x); }\n' \
  > "$scratch/src/launch.cu"
printf 'struct  Wide {int a;};\n' > "$scratch/src/wide.h"
printf 'int  untracked ( ) ;\n' > "$scratch/src/untracked.cpp"
printf 'not   C++ {\n' > "$scratch/src/notes.txt"
git -C "$scratch" init -q
git -C "$scratch" add .clang-format scripts src/formatted.cpp src/launch.cu src/wide.h src/notes.txt

out=$(CI= bash "$scratch/scripts/check_format.sh" 2>&1); status=$?
expect "unformatted sources fail the check" 1 "$status"
expect "the check names the tracked unformatted C++/CUDA sources" "src/launch.cu src/wide.h" \
  "$(sed -n 's/^  //p' <<< "$out" | tr '\n' ' ' | sed 's/ $//')"
expect "the check counts the tracked sources" 1 "$(grep -c '2 of 3 C++/CUDA sources are not formatted' <<< "$out")"

bash "$scratch/scripts/format.sh" > /dev/null
expect "format.sh rewrites the CUDA launch" 'void launch(float* x) { k<<<1, 32>>>(x); }' "$(sed -n 2p "$scratch/src/launch.cu")"
expect "format.sh leaves untracked files" 'int  untracked ( ) ;' "$(cat "$scratch/src/untracked.cpp")"
expect "format.sh leaves other tracked files" 'not   C++ {' "$(cat "$scratch/src/notes.txt")"
CI= bash "$scratch/scripts/check_format.sh" > /dev/null 2>&1
expect "the formatted checkout passes" 0 "$?"

out=$(VT_CLANG_FORMAT=$tmp/none CI=true bash "$scratch/scripts/check_format.sh" 2>&1); status=$?
expect "no clang-format under CI=true fails" "1 1" "$status $(grep -c 'FAILED: VT_CLANG_FORMAT=.* is not an executable' <<< "$out")"
out=$(VT_CLANG_FORMAT=$tmp/none CI= bash "$scratch/scripts/check_format.sh" 2>&1); status=$?
expect "no clang-format outside CI skips with the reason" "77 1" "$status $(grep -c 'skipped: VT_CLANG_FORMAT=' <<< "$out")"

((failures == 0)) && echo "test_check_format: all passed" || echo "test_check_format: $failures failed"
exit $((failures > 0))
