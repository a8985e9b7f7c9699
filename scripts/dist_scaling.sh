#!/usr/bin/env bash
# Data-parallel scaling on one host: DeiT-S and MiTA-DeiT-S training on synthetic data, batch BATCH per
# GPU, bf16, on 1 GPU and on every count in GPU_COUNTS (default: 2 up to the GPUs present, powers of two), ours
# through `vitrain launch -n N -- bench`, timm through torchrun + DDP (scripts/bench_timm_ddp.py, eager and
# torch.compile) in the same run. Prints one markdown table: img/s, scaling efficiency against 1 GPU
# (img/s(N) / (N · img/s(1))), the all-reduce of one gradient's worth of f32 alone (ms, bus bandwidth) and, for
# ours, the share of that communication hidden behind backward: (step with one bucket all-reduced after backward −
# step with 25 MiB buckets overlapping it) / all-reduce time, clamped to [0, 1] (noisy when the all-reduce is a
# small part of the step).
# Run on the GPU machine from the unpacked bundle (scripts/gpu_bundle.sh; .gpu/bin on PATH).
# usage: scripts/dist_scaling.sh OUT_DIR   (env: BATCH (256), STEPS (30), GPU_COUNTS ("2 4 8" up to nproc),
#        TIMM (1; 0 skips the timm peer), TIMM_MODES ("eager compile"))
set -euo pipefail
out=${1:?usage: scripts/dist_scaling.sh OUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
vitrain=${VITRAIN:-$(command -v vitrain || echo "$root/build/bin/vitrain")}
batch=${BATCH:-256}
steps=${STEPS:-30}
ngpu=$(nvidia-smi -L | wc -l)
counts=${GPU_COUNTS:-$(for n in 2 4 8; do if ((n <= ngpu)); then echo -n "$n "; fi; done)}
ours=$out/ours.jsonl
timm=$out/timm.jsonl
: > "$ours"
: > "$timm"

for model in "deit_small_patch16_224 dense" "deit_small_patch16_224 mita"; do
  set -- $model
  args=(bench --model "$1" --attention "$2" --batch-size "$batch" --steps "$steps" --warmup 10 --amp
        --json "$ours")
  "$vitrain" "${args[@]}" --device cuda:0 > /dev/null
  for n in $counts; do
    "$vitrain" launch -n "$n" -- "${args[@]}" --device cuda > /dev/null
    "$vitrain" launch -n "$n" -- "${args[@]}" --bucket-mb 1000000 --device cuda > /dev/null  # no overlap
  done
done
if [[ ${TIMM:-1} == 1 ]]; then
  for n in 1 $counts; do
    env -u LD_LIBRARY_PATH python3 -m torch.distributed.run --standalone --nproc_per_node "$n" \
      "$root/scripts/bench_timm_ddp.py" --models deit_small_patch16_224 --modes ${TIMM_MODES:-eager compile} \
      --batch-size "$batch" --steps "$steps" --out "$timm" > /dev/null
  done
fi

python3 - "$ours" "$timm" <<'PY' | tee "$out/scaling.md"
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
timm = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
rows, one_bucket = {}, {}
for r in ours:
    key = (f"vitrain {r['attention']}", r["model"])
    if r.get("bucket_mb", 0) >= 1e5:
        one_bucket.setdefault(key, {})[r["gpus"]] = r
    else:
        rows.setdefault(key, {})[r.get("gpus", 1)] = r
for r in timm:
    rows.setdefault((r["impl"].replace("_ddp", ""), r["model"]), {})[r["gpus"]] = r
print("| impl | model | GPUs | img/s | step ms | efficiency | all-reduce ms | bus GB/s | hidden | peak GiB |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for (impl, model), by_n in rows.items():
    one = by_n.get(1)
    late = one_bucket.get((impl, model), {})
    for n in sorted(by_n):
        r = by_n[n]
        eff = f"{100 * r['train_img_per_s'] / (n * one['train_img_per_s']):.1f}%" if one and n > 1 else ""
        ar = r.get("grad_allreduce_ms")
        hidden = ""
        if n in late and ar:
            h = (late[n]["train_step_ms"] - r["train_step_ms"]) / ar
            hidden = f"{100 * min(1, max(0, h)):.0f}%"
        bw = r.get("allreduce_busbw_gbps")
        print(f"| {impl} | {model} | {n} | {r['train_img_per_s']:.0f} | {r['train_step_ms']:.1f} | {eff} | "
              f"{'' if not ar or n == 1 else f'{ar:.2f}'} | {'' if not bw or n == 1 else f'{bw:.0f}'} | {hidden} | "
              f"{r.get('train_peak_mem_gib', '')} |")
PY
