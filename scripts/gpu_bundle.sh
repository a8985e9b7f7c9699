#!/usr/bin/env bash
# Build the GPU binaries here (Release, sm_90, own build dir) and pack them, with every shared library the H200
# machine lacks, into the git-ignored folder .gpu/ (bin/, lib/, fonts/, manifest.txt) plus .gpu/bundle.tar.xz, the same
# files compressed (OpenBLAS alone is 36 MB: the folder is ~65 MB, the archive ~15 MB). Carry .gpu/bundle.tar.xz
# (or the whole .gpu while it stays under the device tool's 64 MiB) and run scripts/gpu_check.sh there (docs/gpu.md).
#
# Not bundled (present there, newer or tied to the driver): glibc, libstdc++, libgcc_s, and every CUDA library
# (libcuda, libcudart, libcublas*, libcudnn*, libnccl, and anything else resolved from /usr/local/cuda*).
#
# Env: BUILD_DIR (default build-gpu), JOBS (default 2), VT_GPU_MAX_MB (default 40: fail if the archive is larger),
#      VT_GPU_TARGETS (space-separated targets instead of all, e.g. "vitrain test_cuda plot_heatmap": a smaller
#      archive, leaving room in the carry for a dataset).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
JOBS=${JOBS:-2}
MAX_MB=${VT_GPU_MAX_MB:-40}
DEST=$ROOT/.gpu

command -v /usr/local/cuda/bin/nvcc >/dev/null || command -v nvcc >/dev/null ||
  { echo "gpu_bundle: nvcc not found (need the CUDA toolkit to build for sm_90)" >&2; exit 1; }

# ---- configure + build only what travels ----
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DVT_CUDA=ON -DVT_BUILD_TESTS=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 >"$BUILD.configure.log" 2>&1 ||
  { cat "$BUILD.configure.log" >&2; exit 1; }
rm -f "$BUILD.configure.log"

if [ -n "${VT_GPU_TARGETS:-}" ]; then
  read -r -a wanted <<<"$VT_GPU_TARGETS"
else
  wanted=(vitrain)
  for d in "$ROOT"/tests/*/; do
    compgen -G "$d*.cpp" >/dev/null && wanted+=("test_$(basename "$d")")
  done
  for f in "$ROOT"/tools/*.cpp; do
    [ -e "$f" ] && wanted+=("$(basename "$f" .cpp)")
  done
fi
known=$(ninja -C "$BUILD" -t targets all | sed -n 's/^\([^:/]*\): phony$/\1/p')
targets=()
for t in "${wanted[@]}"; do
  grep -qx "$t" <<<"$known" && targets+=("$t")
done
grep -qx test_cuda <<<"$known" || { echo "gpu_bundle: CMake did not enable CUDA (no test_cuda target)" >&2; exit 1; }
echo "gpu_bundle: building ${targets[*]}"
ninja -C "$BUILD" -j"$JOBS" "${targets[@]}"

# ---- collect binaries ----
rm -rf "$DEST"
mkdir -p "$DEST/bin" "$DEST/lib"
for t in "${targets[@]}"; do
  bin=$(find "$BUILD/bin" "$BUILD/tests" -maxdepth 1 -type f -name "$t" -perm -u+x 2>/dev/null | head -n1)
  [ -n "$bin" ] || { echo "gpu_bundle: built $t but cannot find its executable" >&2; exit 1; }
  cp "$bin" "$DEST/bin/"
done

# ---- collect shared libraries (ldd lists the transitive closure) ----
glibc='linux-vdso|ld-linux|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl'
skip_re="^($glibc|libstdc\\+\\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnccl)\\.so"
missing=0
for bin in "$DEST"/bin/*; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [[ $name =~ $skip_re ]] || [[ $path == /usr/local/cuda* ]]; then continue; fi
    if [ "$path" = "not" ]; then
      echo "gpu_bundle: $(basename "$bin") needs $name, which ldd cannot find here" >&2
      missing=1
      continue
    fi
    [ -e "$DEST/lib/$name" ] || cp -L "$path" "$DEST/lib/$name"
  done < <(ldd "$bin")
done
[ "$missing" = 0 ] || exit 1

# ---- fonts: the GPU machine has no fontconfig set-up, and the figures refuse to draw without a font ----
mkdir -p "$DEST/fonts"
for f in DejaVuSans.ttf DejaVuSans-Bold.ttf; do
  cp /usr/share/fonts/truetype/dejavu/$f "$DEST/fonts/" ||
    { echo "gpu_bundle: no /usr/share/fonts/truetype/dejavu/$f (scripts/setup.sh installs fonts-dejavu-core)" >&2; exit 1; }
done
cat >"$DEST/fonts/fonts.conf" <<'XML'
<?xml version="1.0"?>
<fontconfig><dir prefix="relative">.</dir><cachedir>/tmp/vitrain-fontconfig</cachedir></fontconfig>
XML

# ---- manifest: what was built, from where (gpu_check.sh recreates the source path for tests that read fixtures) ----
{
  echo "built_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  git -C "$ROOT" diff --quiet HEAD 2>/dev/null || rev+=-dirty
  echo "git_rev=$rev"
  echo "source_dir=$ROOT"
  echo "binary_dir=$BUILD"
  nvcc_version=$( (/usr/local/cuda/bin/nvcc --version 2>/dev/null || nvcc --version) |
                 sed -n 's/.*release \([0-9.]*\),.*/\1/p')
  echo "nvcc=$nvcc_version"
  echo "cuda_arch=sm_90"
  echo "binaries=$(cd "$DEST/bin" && echo *)"
  echo "libraries=$(cd "$DEST/lib" && echo *)"
} >"$DEST/manifest.txt"

# ---- archive: what travels. The binaries link the same static libraries, so one xz stream with a dictionary
# larger than a binary stores those bytes once (19 MB in ~25 s; threaded xz -2 split the stream: 45 MB) ----
tar -C "$DEST" -cf - bin lib fonts manifest.txt | xz -T1 --lzma2=preset=1,dict=192MiB >"$DEST/bundle.tar.xz"

echo "gpu_bundle: $(ls "$DEST/bin" | wc -l) binaries ($(cd "$DEST/bin" && echo *)), $(ls "$DEST/lib" | wc -l) libraries"
du -sh "$DEST/bin" "$DEST/lib" "$DEST/bundle.tar.xz"
archive_mb=$(( $(stat -c %s "$DEST/bundle.tar.xz") / 1048576 ))
if [ "$archive_mb" -ge "$MAX_MB" ]; then
  echo "gpu_bundle: bundle.tar.xz is ${archive_mb} MB, over ${MAX_MB} MB: too large to carry" >&2
  exit 1
fi
echo "gpu_bundle: carry .gpu/bundle.tar.xz; on the GPU machine run: bash scripts/gpu_check.sh [extra command]"
