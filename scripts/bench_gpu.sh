#!/usr/bin/env bash
# Dense DeiT-T and DeiT-S at batch 256, 224², bf16, synthetic data on the GPU machine: `vitrain bench` and timm
# (eager and torch.compile, scripts/bench_timm.py) in one run on the same GPU, then a markdown ratio table for
# BENCHMARKS.md.
#   bash scripts/bench_gpu.sh OUT_DIR
# Run on the GPU machine with .gpu/bundle.tar.xz (scripts/gpu_bundle.sh) carried: it is unpacked here; or
# VITRAIN=/path/to/vitrain. Also fine as gpu_check.sh's extra command (after the tests):
# `bash scripts/gpu_check.sh bash scripts/bench_gpu.sh "$OUT"/bench`.
# Writes OUT_DIR/bench.jsonl (one line per implementation and model) and OUT_DIR/table.md.
# Env: STEPS (default 50), WARMUP (10), BATCH (256), MODELS ("deit_tiny_patch16_224 deit_small_patch16_224"),
#      TIMM_MODES ("eager compile"; timm uses fused AdamW, as anchors.md measured), VITRAIN_ARGS (extra `vitrain bench` options, e.g. "--attention mita").
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUT=$1
mkdir -p "$OUT"
JSONL=$OUT/bench.jsonl
: >"$JSONL"
STEPS=${STEPS:-50}
WARMUP=${WARMUP:-10}
BATCH=${BATCH:-256}
MODELS=${MODELS:-"deit_tiny_patch16_224 deit_small_patch16_224"}
TIMM_MODES=${TIMM_MODES:-"eager compile"}

# Our binary needs the bundled libraries; Python must not see them (it keeps the machine's own).
if [ -z "${VITRAIN:-}" ]; then
  # Unpack every time, as gpu_check.sh does: a warm machine may keep an older .gpu/bin.
  if [ -f .gpu/bundle.tar.xz ]; then rm -rf .gpu/bin .gpu/lib && tar -C .gpu -xJf .gpu/bundle.tar.xz; fi
  VITRAIN=$ROOT/.gpu/bin/vitrain
fi
[ -x "$VITRAIN" ] || { echo "bench_gpu: no vitrain binary (set VITRAIN or carry .gpu/bundle.tar.xz)" >&2; exit 2; }
OUR_LIBS=$ROOT/.gpu/lib:/usr/local/cuda/lib64
PY=(env -u LD_LIBRARY_PATH python3)

env -u LD_LIBRARY_PATH nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | tee "$OUT/gpu.txt" || true
status=0
for model in $MODELS; do
  echo "== vitrain bench $model"
  # shellcheck disable=SC2086  # VITRAIN_ARGS is a list of options
  LD_LIBRARY_PATH=$OUR_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$VITRAIN" bench --model "$model" \
    --batch-size "$BATCH" --steps "$STEPS" --warmup "$WARMUP" --amp --infer --device cuda:0 \
    --json "$JSONL" ${VITRAIN_ARGS:-} || { echo "vitrain bench $model FAILED" >&2; status=1; }
done
echo "== timm ($TIMM_MODES)"
# shellcheck disable=SC2086
"${PY[@]}" scripts/bench_timm.py --models $MODELS --modes $TIMM_MODES --batch-size "$BATCH" --steps "$STEPS" \
  --warmup "$WARMUP" --fused-adamw --out "$JSONL" || { echo "bench_timm.py FAILED" >&2; status=1; }

"${PY[@]}" - "$JSONL" "$(cat "$OUT/gpu.txt" 2>/dev/null || true)" >"$OUT/table.md" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {(r["model"], r["impl"]): r for r in rows}
models = list(dict.fromkeys(r["model"] for r in rows))
peers = [i for i in ("timm_eager", "timm_compile") if any(k[1] == i for k in by)]
def num(v, fmt="{:,.0f}"):
    return "n/a" if v is None else fmt.format(v)
def ratio(a, b):
    return "n/a" if a is None or not b else f"**{a / b:.2f}×**"
print(f"GPU: {sys.argv[2] or 'unknown'}; batch {rows[0]['batch_size'] if rows else '?'}, 224², bf16 autocast, "
      "synthetic data, AdamW; img/s over the timed steps.\n")
for kind, key in (("train", "train_img_per_s"), ("infer", "infer_img_per_s")):
    head = ["model", f"vitrain {kind} img/s"] + [f"{p} img/s" for p in peers] + [f"vs {p}" for p in peers]
    head += ["vitrain peak GiB"] + [f"{p} peak GiB" for p in peers]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    mem = key.replace("img_per_s", "peak_mem_gib")
    for m in models:
        ours = by.get((m, "vitrain"), {})
        cells = [m, num(ours.get(key))]
        cells += [num(by.get((m, p), {}).get(key)) for p in peers]
        cells += [ratio(ours.get(key), by.get((m, p), {}).get(key)) for p in peers]
        cells += [num(ours.get(mem), "{:.2f}")] + [num(by.get((m, p), {}).get(mem), "{:.2f}") for p in peers]
        print("| " + " | ".join(cells) + " |")
    print()
PYEOF
cat "$OUT/table.md"
exit "$status"
