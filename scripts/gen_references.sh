#!/usr/bin/env bash
# On the GPU machine (where timm is installed): regenerate every timm reference fixture into $OUT (default ./out).
# Commit the results under tests/ref/. Run from the repo root, outside gpu_check.sh's LD_LIBRARY_PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out}
mkdir -p "$out"
env -u LD_LIBRARY_PATH python3 scripts/gen_reference.py "$out/vit_ref.safetensors"
env -u LD_LIBRARY_PATH python3 scripts/gen_deit_reference.py "$out/deit_tiny_ref.safetensors"
env -u LD_LIBRARY_PATH python3 scripts/gen_segmenter_reference.py "$out/segmenter_reference.safetensors"
