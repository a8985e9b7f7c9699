# Sourced by scripts/format.sh and scripts/check_format.sh: the files they format and the clang-format they use.

# Every tracked C++ and CUDA source under the repository root $1 that the work tree has, relative to $1 and
# NUL-separated (nothing in the tree is vendored or generated; the CUDA-less build's stubs go to the build folder).
format_sources() {
  local file
  git -C "$1" ls-files -z -- '*.cpp' '*.h' '*.cu' '*.cuh' | while IFS= read -r -d '' file; do
    if [[ -f "$1/$file" ]]; then printf '%s\0' "$file"; fi
  done
}

# Sets CLANG_FORMAT to a clang-format of major version 14, the one .clang-format is written for (another version
# formats some constructs differently): $VT_CLANG_FORMAT when set, else clang-format-14 or clang-format from PATH.
# Returns 1 with the reason in CLANG_FORMAT_PROBLEM when there is none.
find_clang_format() {
  CLANG_FORMAT= CLANG_FORMAT_PROBLEM="clang-format is not installed (scripts/setup.sh installs it)"
  local candidate version candidates=(clang-format-14 clang-format)
  if [[ -n "${VT_CLANG_FORMAT:-}" ]]; then
    candidates=("$VT_CLANG_FORMAT")
    CLANG_FORMAT_PROBLEM="VT_CLANG_FORMAT=$VT_CLANG_FORMAT is not an executable"
  fi
  for candidate in "${candidates[@]}"; do
    command -v "$candidate" > /dev/null || continue
    version=$("$candidate" --version)
    if [[ "$version" =~ version\ 14\. ]]; then
      CLANG_FORMAT=$candidate
      return 0
    fi
    CLANG_FORMAT_PROBLEM="$candidate is not version 14 but \"$version\" (scripts/setup.sh installs Debian 12's 14)"
  done
  return 1
}
