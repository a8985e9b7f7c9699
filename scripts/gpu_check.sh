#!/usr/bin/env bash
# The one command to run ON the GPU machine, from the repo root, with .gpu/ (scripts/gpu_bundle.sh) carried along:
# prints the GPU, runs every .gpu/bin/test_* binary (gtest JSON + logs into $OUT), then the optional extra command
# given as arguments (e.g. `bash scripts/gpu_check.sh vitrain bench ...`; .gpu/bin is on PATH).
# Exit status: 0 when every test binary and the extra command passed, 1 otherwise (also when nvidia-smi lists a GPU
# and a test skipped itself for want of a CUDA device), 2 when the bundle is missing.
# FONTCONFIG_FILE=.gpu/fonts/fonts.conf (the bundled fonts) and LD_LIBRARY_PATH=.gpu/lib:/usr/local/cuda/lib64 are
# exported for the tests and the extra command; a Python step in
# the extra command should drop it (`env -u LD_LIBRARY_PATH python3 ...`) so it keeps the machine's own libraries.
#
# $OUT (default ./out) receives few files on purpose (the device tool brings back at most 8):
#   summary.txt  GPU, bundle manifest, one status line per binary;  tests.log  all test output;
#   gtest.json   every binary's --gtest_output=json merged into one object;  extra.log  the extra command.
# Carry .gpu-data/fashion-mnist too (a subset; see docs/gpu.md) for the tests that train.
# Env: VT_GPU_TESTS="test_cuda test_ops" runs only those binaries (none: no tests, only the extra command);
#      GTEST_FILTER is honoured by gtest itself;
#      VT_TEST_TIMEOUT seconds per binary (default 300).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUNDLE=$ROOT/.gpu
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SUMMARY=$OUT/summary.txt
LOG=$OUT/tests.log
: >"$SUMMARY"
: >"$LOG"

say() { echo "$@" | tee -a "$SUMMARY"; }

# The archive is what usually travels; unpack it every time (a warm machine may keep an older .gpu/bin).
if [ -f "$BUNDLE/bundle.tar.xz" ]; then
  rm -rf "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/fonts" "$BUNDLE/manifest.txt"
  tar -C "$BUNDLE" -xJf "$BUNDLE/bundle.tar.xz" || { say "gpu_check: cannot unpack $BUNDLE/bundle.tar.xz"; exit 2; }
fi
if [ ! -d "$BUNDLE/bin" ]; then
  say "gpu_check: no bundle in $BUNDLE (run scripts/gpu_bundle.sh on the build machine and carry .gpu/bundle.tar.xz)"
  exit 2
fi

# ---- machine (before LD_LIBRARY_PATH: system tools must not pick up the bundled Debian libraries) ----
say "== gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
has_gpu=0
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && has_gpu=1
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,temperature.gpu,power.draw,clocks.max.sm \
    --format=csv 2>&1 | tee -a "$SUMMARY"
else
  say "nvidia-smi: not found"
fi
say "== bundle"
tee -a "$SUMMARY" <"$BUNDLE/manifest.txt"
export LD_LIBRARY_PATH=$BUNDLE/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$BUNDLE/bin:$PATH
# The bundled DejaVu fonts: the machine has no fontconfig set-up of its own, and figures need a font.
[ -f "$BUNDLE/fonts/fonts.conf" ] && export FONTCONFIG_FILE=$BUNDLE/fonts/fonts.conf

# Tests that read fixtures or write scratch files use the absolute paths baked in at build time
# (VT_SOURCE_DIR / VT_BINARY_DIR); point them at this checkout when they do not exist here.
src_dir=$(sed -n 's/^source_dir=//p' "$BUNDLE/manifest.txt")
bin_dir=$(sed -n 's/^binary_dir=//p' "$BUNDLE/manifest.txt")
if [ -n "$src_dir" ] && [ ! -e "$src_dir" ]; then
  if mkdir -p "$(dirname "$src_dir")" 2>/dev/null && ln -s "$ROOT" "$src_dir" 2>/dev/null; then
    say "linked $src_dir -> $ROOT"
  else
    say "warning: cannot create $src_dir; tests reading fixtures may fail"
  fi
fi
[ -n "$bin_dir" ] && mkdir -p "$bin_dir" 2>/dev/null

# A Fashion-MNIST subset carried as .gpu-data/fashion-mnist (git-ignored) stands in for the Debian package, so the
# tests that train (tests/cuda/test_training_cuda.cpp, tests/unit resume tests) run here too.
fmnist=/usr/share/datasets/fashion-mnist
if [ ! -e "$fmnist" ] && [ -d "$ROOT/.gpu-data/fashion-mnist" ]; then
  mkdir -p "$(dirname "$fmnist")" 2>/dev/null && ln -s "$ROOT/.gpu-data/fashion-mnist" "$fmnist" 2>/dev/null &&
    say "linked $fmnist -> .gpu-data/fashion-mnist"
fi

# ---- tests ----
if [ "${VT_GPU_TESTS:-}" = none ]; then
  tests=()
elif [ -n "${VT_GPU_TESTS:-}" ]; then
  tests=()
  for t in $VT_GPU_TESTS; do tests+=("$BUNDLE/bin/$t"); done
else
  tests=("$BUNDLE"/bin/test_*)
fi
json_dir=$(mktemp -d)
status=0
results=()
for bin in "${tests[@]}"; do
  name=$(basename "$bin")
  if [ ! -x "$bin" ]; then
    results+=("$name: MISSING")
    status=1
    continue
  fi
  if ldd "$bin" | grep -q 'not found'; then
    ldd "$bin" | grep 'not found' | tee -a "$LOG"
  fi
  echo "== $name" | tee -a "$LOG"
  start=$(date +%s)
  timeout "${VT_TEST_TIMEOUT:-300}" "$bin" --gtest_output="json:$json_dir/$name.json" 2>&1 | tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  secs=$(($(date +%s) - start))
  # gtest's closing lines carry the counts, e.g. "[  PASSED  ] 9 tests." / "[  SKIPPED ] 9 tests, listed below:"
  counts=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) *\] [0-9]+ tests?' <(sed -n "/^== $name\$/,\$p" "$LOG") |
           sed -E 's/^\[  ([A-Z]+) *\] ([0-9]+) tests?.*/\2 \1/' | tr '\n' ' ' | tr 'A-Z' 'a-z' | sed 's/ *$//')
  # On a machine that has a GPU, a test skipped for want of one means the device was unusable (driver, bundle
  # libraries): that is a failure, not a pass.
  unusable=0
  if [ "$has_gpu" = 1 ] && sed -n "/^== $name\$/,\$p" "$LOG" | grep -q 'no CUDA device'; then
    unusable=$(sed -n "/^== $name\$/,\$p" "$LOG" | grep -c 'no CUDA device')
  fi
  if [ "$unusable" != 0 ]; then
    results+=("$name: FAILED: $unusable tests skipped with 'no CUDA device' on a machine with a GPU (${counts:-no counts}) ${secs}s")
    status=1
  elif [ "$rc" = 0 ]; then
    results+=("$name: ok (${counts:-no counts}) ${secs}s")
  else
    results+=("$name: FAILED rc=$rc (${counts:-no counts}) ${secs}s")
    status=1
  fi
done

# One JSON for all binaries: {"test_cuda": <gtest json>, ...}.
if command -v python3 >/dev/null; then
  env -u LD_LIBRARY_PATH python3 - "$json_dir" "$OUT/gtest.json" <<'EOF'
import json, pathlib, sys
src, dst = pathlib.Path(sys.argv[1]), sys.argv[2]
merged = {}
for f in sorted(src.glob("*.json")):
    try:
        merged[f.stem] = json.loads(f.read_text())
    except ValueError as e:
        merged[f.stem] = {"error": f"unreadable gtest json: {e}"}
json.dump(merged, open(dst, "w"), indent=1)
EOF
else
  tar -C "$json_dir" -cf "$OUT/gtest_json.tar" .
fi
rm -rf "$json_dir"

# ---- extra command ----
if [ $# -gt 0 ]; then
  echo "== extra: $*" | tee "$OUT/extra.log"
  start=$(date +%s)
  "$@" 2>&1 | tee -a "$OUT/extra.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ]; then
    results+=("extra ($1): ok $(($(date +%s) - start))s")
  else
    results+=("extra ($1): FAILED rc=$rc $(($(date +%s) - start))s")
    status=1
  fi
fi

say "== results (logs and gtest.json in $OUT)"
for r in "${results[@]}"; do say "$r"; done
say "gpu_check: $([ "$status" = 0 ] && echo PASS || echo FAIL)"
exit "$status"
