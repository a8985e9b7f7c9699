#!/usr/bin/env bash
# ADE20K-sized segmentation throughput: Segmenter ViT-S/16 + CBT decoder at 512², batch 8,
# dense vs MiTA (m = k = 49), f32 (the official recipe: AMP off) and bf16 autocast, synthetic images and labels:
# training img/s (forward, upsample, pixel cross-entropy, backward, SGD) and evaluation windows/s (forward of
# 512² windows; an ADE20K validation image resized to short side 512 is ~2 windows at stride 480), with peak
# memory. The peer, in the same run: the same model in PyTorch (timm's ViT + our PyTorch CBT decoder,
# scripts/bench_segmenter_torch.py), eager and torch.compile, dense only.
# Run on the GPU machine from the unpacked bundle (.gpu/bin on PATH). usage: scripts/bench_seg.sh OUT_DIR
# Env: STEPS (20), TORCH (1; 0 skips the PyTorch peer)
set -euo pipefail
out=${1:?usage: scripts/bench_seg.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
vitrain=${VITRAIN:-$(command -v vitrain || echo "$root/build/bin/vitrain")}
steps=${STEPS:-20}
jsonl=$out/seg_bench.jsonl
: > "$jsonl"
for amp in false true; do
  for cfg in vit_small_dense vit_small_mita; do
    "$vitrain" bench -c "$root/configs/ade20k/$cfg.yaml" --set train.amp=$amp --steps "$steps" --warmup 5 \
      --device cuda:0 --json "$jsonl"
  done
  if [[ ${TORCH:-1} == 1 ]]; then
    flag=$([[ $amp == true ]] && echo --amp || true)
    env -u LD_LIBRARY_PATH python3 "$root/scripts/bench_segmenter_torch.py" --backbone vit_small_patch16_384 \
      --img 512 --batch 8 --steps "$steps" $flag --out "$jsonl" || echo "PyTorch peer failed (amp=$amp)"
  fi
done
python3 - "$jsonl" <<'PY' | tee "$out/seg_bench.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in rows:
    if r.get("error"):
        print(f"{r['impl']} ({'bf16' if r['amp'] else 'f32'}) failed: {r['error']}")
rows = [r for r in rows if not r.get("error")]
def key(r):
    return ("bf16" if r["amp"] else "f32")
dense = {key(r): r for r in rows if r["impl"] == "vitrain" and r["attention"] == "dense"}
print("| impl | attention | precision | train img/s | step ms | train peak GiB | eval windows/s | eval peak GiB | "
      "train vs our dense | eval vs our dense |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    d = dense.get(key(r))
    def ratio(k):
        return f"{r[k] / d[k]:.2f}x" if d and r.get(k) and d.get(k) else ""
    print(f"| {r['impl']} | {r.get('attention', 'dense')} | {key(r)} | {r['train_img_per_s']:.1f} | "
          f"{r['train_step_ms']:.1f} | {r.get('train_peak_mem_gib') or ''} | {r.get('infer_img_per_s') or 0:.1f} | "
          f"{r.get('infer_peak_mem_gib') or ''} | {ratio('train_img_per_s')} | {ratio('infer_img_per_s')} |")
PY
