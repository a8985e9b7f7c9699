#!/usr/bin/env bash
# Command B: install dependencies, build, run the test suite. Tests labelled `cuda` skip with a reason when
# there is no GPU; `slow` tests run too unless VT_SKIP_SLOW=1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
exclude=()
[[ "${VT_SKIP_SLOW:-0}" == 1 ]] && exclude=(-LE slow)
ctest --test-dir build -j2 --output-on-failure "${exclude[@]}"
# ctest lists skipped tests without their reason; show why the GPU tests did not run.
if [[ -x build/tests/test_cuda ]]; then
  reason=$(build/tests/test_cuda --gtest_filter='GeluCuda.EmptyIsNoOp' 2>&1 | grep -m1 -o 'no CUDA device.*' || true)
  [[ -n "$reason" ]] && echo "GPU tests skipped: $reason (run them on the GPU machine: docs/gpu.md)"
fi
