#!/usr/bin/env bash
# Figures 3, 4, 9 and 10 from our own models: trains the Fashion-MNIST patch-2 proxy
# (configs/proxy/fmnist_p2_mita.yaml: 197 tokens, 14x14 grid, m = k = 25) with MiTA, dense and Agent attention,
# then draws the routing of one test image (vitrain viz experts), sweeps (m, k) at evaluation on the frozen MiTA
# weights (vitrain eval-sweep) and swaps the attention kinds at evaluation (vitrain eval-swap).
# Usage: scripts/proxy_figures.sh DATA_DIR OUT_DIR   (env: EPOCHS (10), DEVICE (cuda:0), VITRAIN)
set -euo pipefail
data=${1:?usage: scripts/proxy_figures.sh DATA_DIR OUT_DIR}
out=${2:?usage: scripts/proxy_figures.sh DATA_DIR OUT_DIR}
vitrain=${VITRAIN:-$(command -v vitrain || echo build/bin/vitrain)}
epochs=${EPOCHS:-10} device=${DEVICE:-cuda:0}
cfg=configs/proxy/fmnist_p2_mita.yaml
mkdir -p "$out"
for kind in mita dense agent; do
  "$vitrain" train --config "$cfg" --device "$device" --set data.data_dir="$data" --set train.epochs="$epochs" \
    --set model.attention.type="$kind" --set train.output="$out/$kind" 2>&1 | grep -E "epoch [0-9]+/[0-9]+:|training:" |
    tail -2
done
# One test image as a PNG (the IDX file holds 28x28 bytes after a 16-byte header).
python3 - "$data/t10k-images-idx3-ubyte.gz" "$out/test_image.png" <<'PY'
import gzip, sys, zlib, struct
raw = gzip.open(sys.argv[1]).read()
px = raw[16:16 + 28 * 28]
rows = b"".join(b"\x00" + px[r * 28:(r + 1) * 28] for r in range(28))
def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xffffffff)
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 28, 28, 8, 0, 0, 0, 0)) + \
    chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
open(sys.argv[2], "wb").write(png)
PY
"$vitrain" viz experts --config "$out/mita/config.yaml" --weights "$out/mita/model.safetensors" \
  --image "$out/test_image.png" --out "$out/viz" --device "$device" || echo "viz experts failed" >&2
"$vitrain" eval-sweep --config "$out/mita/config.yaml" --weights "$out/mita/model.safetensors" \
  --m 16 25 36 49 --k 9 16 25 36 49 --out "$out/sweep" --device "$device" || echo "eval-sweep failed" >&2
"$vitrain" eval-swap --config "$out/mita/config.yaml" --weights-dense "$out/dense/model.safetensors" \
  --weights-mita "$out/mita/model.safetensors" --weights-agent "$out/agent/model.safetensors" --out "$out/swap" \
  --device "$device"
