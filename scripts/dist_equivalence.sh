#!/usr/bin/env bash
# 1 GPU × batch 2b versus 2 GPUs × batch b, 20 optimizer updates of a DeiT-Tiny-shaped model (width 192, depth 12,
# 3 heads) on Fashion-MNIST (28×28 gray, patch 4: 49 tokens + CLS, 10 classes), in f32 and in bf16 autocast; prints
# the per-update training loss of both runs and the largest difference. Needs ≥ 2 GPUs and vitrain (VITRAIN, else
# vitrain on PATH, else build/bin/vitrain); the 2-rank run goes through `vitrain launch -n 2 -- train ...`.
#
# What it compares: with data.hflip 0 and drop-path/dropout 0 nothing random depends on the rank, and the
# Fashion-MNIST path gives rank r rows [r·b, (r+1)·b) of the same global batch of 2b that the 1-GPU run trains on,
# so both runs see the same images (at most the first 2,048; the GPU runner carries a 2,000-image subset), initial
# weights and learning rates. The logged loss is the mean over all 2b samples (the 2-rank run all-reduces it).
# The results still differ by rounding, not bit for bit: the 1-GPU run sums each weight gradient over 2b samples
# inside one GEMM, the 2-rank run sums b per GPU (other GEMM shapes, other cuBLASLt algorithms) and then adds the
# two halves; these f32 differences grow slowly through AdamW. Also runs 2 GPUs with dist.zero1 (f32), which
# should match the 2-GPU DDP run to rounding as well.
# Expect max |Δloss| around 1e-5..1e-4 in f32 and around 1e-3..1e-2 in bf16.
# The deterministic comparison removes the GEMM-shape difference: 1 GPU with train.grad_accum_steps 2 of b rows
# (each micro-batch's loss × 1/2, gradients added) against 2 GPUs × b (gradients summed by NCCL, then × 1/2). Both
# compute each half's gradient with the same shapes and kernels, and scaling by 1/2 is exact, so in f32 the two
# runs must agree bit for bit (they do as long as no kernel in the step uses float atomics). The check compares the
# weights and AdamW state of both final checkpoints byte for byte; the logged losses may still differ in the last
# bit, the 1-GPU run adding the halves' losses in f32 and the 2-GPU run in f64.
#
# usage: scripts/dist_equivalence.sh OUT_DIR   (env: B=per-GPU batch (32), STEPS (20), DATA=fashion-mnist dir)
set -euo pipefail
out=${1:?usage: scripts/dist_equivalence.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
vitrain=${VITRAIN:-$(command -v vitrain || echo "$root/build/bin/vitrain")}
b=${B:-32}
steps=${STEPS:-20}
data=${DATA:-/usr/share/datasets/fashion-mnist}
[[ -e $data ]] || data=$root/.gpu-data/fashion-mnist
[[ -e $data ]] || { echo "no Fashion-MNIST at /usr/share/datasets/fashion-mnist or .gpu-data (DATA=...)" >&2; exit 2; }
mkdir -p "$out"

# The Fashion-MNIST base of the tests (the defaults are DeiT's ImageNet recipe), then this rig's settings.
common=(--config "$root/tests/fmnist_base.yaml" --set model.name=deit_tiny_patch16_224 --set model.img_size=28 --set model.patch_size=4
        --set model.in_chans=1 --set model.num_classes=10 --set model.drop_rate=0 --set model.drop_path_rate=0
        --set data.dataset=fashion_mnist --set data.data_dir="$data" --set data.hflip=0
        --set data.train_limit=2048 --set data.test_limit=500
        --set optim.lr=5e-4 --set schedule.warmup_epochs=0.2 --set train.epochs=100 --set train.max_steps="$steps"
        --set train.log_interval=1 --set train.seed=0 --set train.model_ema=false --set eval.batch_size=250)

run() {  # name amp ranks batch [extra --set ...]
  local dir=$out/$1
  rm -rf "$dir"
  local args=(train "${common[@]}" --set train.amp="$2" --set train.batch_size="$4" --set train.output="$dir" "${@:5}")
  if (($3 == 1)); then
    "$vitrain" "${args[@]}" --device cuda:0 > "$dir.log" 2>&1 || { tail -20 "$dir.log"; return 1; }
  else
    "$vitrain" launch -n "$3" -- "${args[@]}" --device cuda > "$dir.log" 2>&1 || { tail -20 "$dir.log"; return 1; }
  fi
}

compare() {  # label dir1 dir2
  python3 - "$1" "$2/metrics.jsonl" "$3/metrics.jsonl" <<'PY'
import json, sys
label, a, b = sys.argv[1:]
def losses(path):
    out = {}
    for line in open(path):
        row = json.loads(line)
        if "train_loss" in row:
            out[int(row["step"])] = row["train_loss"]
    return out
la, lb = losses(a), losses(b)
steps = sorted(set(la) & set(lb))
print(f"== {label}: update, loss A, loss B, |diff|")
worst = 0.0
for s in steps:
    d = abs(la[s] - lb[s])
    worst = max(worst, d)
    print(f"{s:4d}  {la[s]:.8f}  {lb[s]:.8f}  {d:.3e}")
if len(steps) != len(la) or len(steps) != len(lb):
    print(f"WARNING: {len(la)} vs {len(lb)} logged updates")
print(f"== {label}: max |diff| over {len(steps)} updates = {worst:.3e}" +
      ("  (bit-identical)" if worst == 0 else ""))
PY
}

for amp in false true; do
  label=$([[ $amp == true ]] && echo bf16 || echo f32)
  run "${label}_1x$((2 * b))" "$amp" 1 $((2 * b))
  run "${label}_2x$b" "$amp" 2 "$b"
  compare "$label: A = 1 GPU x $((2 * b)), B = 2 GPUs x $b" "$out/${label}_1x$((2 * b))" "$out/${label}_2x$b" | tee "$out/${label}_compare.txt"
done
run "f32_1x${b}_accum2" false 1 "$b" --set train.grad_accum_steps=2
compare "f32 deterministic: A = 1 GPU x $b x 2 accumulation, B = 2 GPUs x $b" "$out/f32_1x${b}_accum2" "$out/f32_2x$b" | tee "$out/deterministic_compare.txt"
python3 - "$out/f32_1x${b}_accum2/recovery.safetensors" "$out/f32_2x$b/recovery.safetensors" <<'PY' | tee -a "$out/deterministic_compare.txt"
import json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    return {k: raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in header.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
differ = [k for k in a if a[k] != b.get(k)]
print(f"== f32 deterministic: {len(a) - len(differ)} of {len(a)} checkpoint tensors (weights + AdamW state after 20 "
      f"updates) bit-identical" + (f"; differing: {differ[:5]}" if differ else ""))
PY
common+=(--set dist.zero1=true)
run "f32_2x${b}_zero1" false 2 "$b"
compare "f32: A = 2 GPUs DDP, B = 2 GPUs ZeRO-1" "$out/f32_2x$b" "$out/f32_2x${b}_zero1" | tee "$out/zero1_compare.txt"
