#!/usr/bin/env bash
# Command A: install dependencies, build, train the demo ViT on Fashion-MNIST, evaluate it on the test set.
# Extra arguments go to `vitrain train` (e.g. --set train.epochs=1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh -- vitrain   # the CLI only: the test suites are not needed here
start=$(date +%s)
./build/bin/vitrain train --config configs/fashion_mnist_vit.yaml "$@"
echo "train + evaluate took $(( $(date +%s) - start )) s (build excluded)"
