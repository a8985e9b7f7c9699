#!/usr/bin/env bash
# Formats every tracked C++ and CUDA source in place with clang-format 14 and the repository's .clang-format: the
# one way to format the code. The ctest `format` (scripts/check_format.sh) checks the same files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/lib/format_sources.sh"
find_clang_format || { echo "format: $CLANG_FORMAT_PROBLEM" >&2; exit 1; }
cd "$root"
[[ -f .clang-format ]] || { echo "format: $root/.clang-format not found" >&2; exit 1; }
format_sources "$root" | xargs -0 -r -n 50 -P "$(nproc)" "$CLANG_FORMAT" -i --style=file
echo "format: formatted $(format_sources "$root" | tr -cd '\0' | wc -c) files with $CLANG_FORMAT"
