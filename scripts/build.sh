#!/usr/bin/env bash
# Configures and builds (Release) into build/. Usage: build.sh [CMAKE_ARGS...] [-- TARGETS...]
# CMAKE_ARGS go to CMake's configure step (e.g. -DCMAKE_CUDA_ARCHITECTURES=80); TARGETS (default: all) to ninja.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake_args=()
while (($#)) && [[ "$1" != -- ]]; do cmake_args+=("$1"); shift; done
(($#)) && shift
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}" >/dev/null
ninja -C build -j"$(nproc)" "$@"
