#!/usr/bin/env bash
# Configures and builds (Release) into build/. Extra arguments are passed to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
ninja -C build -j"$(nproc)"
