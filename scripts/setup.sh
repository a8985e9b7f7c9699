#!/usr/bin/env bash
# Installs every build and run dependency from Debian packages. Idempotent and non-interactive:
# packages already present are skipped, so a second run costs a few seconds. `setup.sh --list` prints the list.
# The CUDA toolkit (/usr/local/cuda, with NCCL when present) is not a Debian package and is not installed here.
# The ctest `setup_packages` (scripts/check_setup_packages.sh) fails when the build uses a header or library that
# none of these packages (with their dependencies) provides.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libopencv-core-dev libopencv-imgproc-dev
  libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev
  libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libcairo2-dev libpango1.0-dev fonts-dejavu-core
  libgtest-dev googletest
  libopenblas-openmp-dev
  dataset-fashion-mnist
  xz-utils python3
  clang-format
)

if [[ "${1:-}" == --list ]]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
