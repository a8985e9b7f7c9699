#!/usr/bin/env bash
# Fuzzes a reader's validation with libFuzzer for a bounded time (a developer tool, not part of scripts/test.sh;
# needs clang, which Debian's `clang` package provides).
#   scripts/fuzz.sh [SECONDS=60] [WORKERS=1] [TARGET=safetensors|torch]
# TARGET safetensors: the safetensors header parser (tools/fuzz_safetensors.cpp); torch: the PyTorch checkpoint
# reader — zip container, restricted unpickler, tensor bounds and element copy (tools/fuzz_torch_checkpoint.cpp).
# Builds build-fuzz/fuzz_<target> (clang -fsanitize=fuzzer,address,undefined), seeds a corpus with small
# valid files, runs, and exits non-zero if libFuzzer found a crash, leak, out-of-bounds read or an error that
# does not name the file. Crashing inputs land in build-fuzz/crashes/ (safetensors) or build-fuzz/torch/crashes/;
# replay one through the full reader with the normal build's `build/bin/fuzz_<target> FILE`. The corpus persists
# between runs (build-fuzz/corpus, build-fuzz/torch/corpus).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
workers=${2:-1}
target=${3:-safetensors}
out=${VT_FUZZ_DIR:-$root/build-fuzz}
cxx=${CXX_FUZZ:-clang++}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (apt-get install clang)" >&2; exit 2; }
parallel=()
[ "$workers" -gt 1 ] && parallel=(-jobs="$workers" -workers="$workers")

# Runs the built fuzzer $1 on corpus $2 with seeds $3 and dictionary $4; crashes go to $5.
run_fuzzer() {
  cd "$out"
  set +e
  "$1" "$2" "$3" -dict="$4" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$5/" "${parallel[@]}" -print_final_stats=1
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    echo "fuzz.sh: libFuzzer exited with $rc; crashing inputs in $5/" >&2
    exit "$rc"
  fi
  echo "fuzz.sh: no crash in ${seconds}s; corpus: $(ls "$2" | wc -l) inputs"
}

if [ "$target" = torch ]; then
  t="$out/torch"
  mkdir -p "$t/corpus" "$t/seeds" "$t/crashes"
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DVT_LIBFUZZER \
    -I"$root/src" -I"$root" "$root/tools/fuzz_torch_checkpoint.cpp" "$root/src/io/torch_state_dict.cpp" \
    "$root/src/io/torch_pickle.cpp" "$root/src/io/zip_archive.cpp" "$root/src/io/atomic_file.cpp" \
    "$root/src/core/error.cpp" "$root/src/core/dtype.cpp" "$root/src/core/shape.cpp" -lz \
    -o "$out/fuzz_torch_checkpoint"
  # Seeds: the checkpoints torch 1.13 wrote for the unit tests (zip and legacy formats, wrappers, refused globals).
  cp "$root"/tests/ref/torch_*.pth "$t/seeds/"
  run_fuzzer "$out/fuzz_torch_checkpoint" "$t/corpus" "$t/seeds" "$root/tools/fuzz/torch.dict" "$t/crashes"
  exit 0
fi
[ "$target" = safetensors ] || { echo "fuzz.sh: unknown target '$target' (safetensors or torch)" >&2; exit 2; }
mkdir -p "$out/corpus" "$out/seeds" "$out/crashes"

"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -DVT_LIBFUZZER \
  -I"$root/src" -I"$root" "$root/tools/fuzz_safetensors.cpp" "$root/src/io/safetensors_header.cpp" \
  "$root/src/io/json.cpp" "$root/src/core/error.cpp" "$root/src/core/dtype.cpp" "$root/src/core/shape.cpp" \
  -o "$out/fuzz_safetensors"

# Seeds: small valid files of each dtype, metadata, empty and 0-dim tensors.
python3 - "$out/seeds" <<'PY'
import json, struct, sys, os
out = sys.argv[1]
def write(name, tensors, meta=None):
    header, data = {}, b""
    if meta: header["__metadata__"] = meta
    for n, (dt, shape, raw) in tensors.items():
        header[n] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    open(os.path.join(out, name), "wb").write(struct.pack("<Q", len(h)) + h + data)
write("one_f32", {"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4))})
write("mixed", {"a": ("F64", [1], struct.pack("<d", 1)), "b": ("BF16", [3], b"\0" * 6),
                "c": ("I64", [], struct.pack("<q", 7)), "d": ("U8", [0, 5], b""), "e": ("I32", [1, 1], b"\1\0\0\0")},
      {"format": "pt", "model": "deit"})
write("empty", {})
PY

run_fuzzer "$out/fuzz_safetensors" "$out/corpus" "$out/seeds" "$root/tools/fuzz/safetensors.dict" "$out/crashes"
