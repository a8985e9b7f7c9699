#!/usr/bin/env bash
# The paper's Figure 5 on the GPU machine: inference samples/s of the 3-block long-sequence model for N = 1K..1M
# with our MiTA, our dense (flash) attention and PyTorch SDPA (tools/bench_mita_long, scripts/bench_mita_long.py),
# plus the attention layer alone (forward, forward + backward; C128/H2 and the DeiT-S shape), then one markdown
# table with the speed-ups MiTA / best dense next to the paper's targets, and a log-log PNG of samples/s vs N.
#   bash scripts/bench_fig5.sh OUT_DIR                 # run everything (GPU machine)
#   bash scripts/bench_fig5.sh --report-only OUT_DIR   # only rebuild fig5.md / fig5.png from OUT_DIR/*.csv
# Run on the GPU machine with .gpu/bundle.tar.xz (scripts/gpu_bundle.sh) carried: it is unpacked here; or set
# BENCH=/path/to/bench_mita_long (and PLOT_XY=/path/to/plot_xy). Also fine as gpu_check.sh's extra command.
# Writes OUT_DIR/{ours,torch}_{model,layer}.csv, fig5.md, fig5_series.csv, fig5.png (when plot_xy is there).
# Env: NS (default 1024,...,1048576), BATCH_DENSE (64,16,4,1,1,1), BATCH_MITA (64,16,8,4,2,1), ITERS (20),
#      WARMUP (2), TARGET_S (0.5 s of timed calls per point), LAYER (1: also the layer benchmarks), IMPL (fused).
set -euo pipefail
report_only=0
if [ "${1:-}" = "--report-only" ]; then report_only=1; shift; fi
[ $# -eq 1 ] || { echo "usage: $0 [--report-only] OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
cd "$ROOT"
NS=${NS:-1024,4096,16384,65536,262144,1048576}
BATCH_DENSE=${BATCH_DENSE:-64,16,4,1,1,1}
BATCH_MITA=${BATCH_MITA:-64,16,8,4,2,1}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-2}
TARGET_S=${TARGET_S:-0.5}
LAYER=${LAYER:-1}
IMPL=${IMPL:-fused}

# Our binaries need the bundled libraries; Python must not see them (it keeps the machine's own).
if [ -z "${BENCH:-}" ] && [ -f .gpu/bundle.tar.xz ] && [ "$report_only" = 0 ]; then
  rm -rf .gpu/bin .gpu/lib && tar -C .gpu -xJf .gpu/bundle.tar.xz  # a warm machine may keep an older .gpu/bin
fi
BENCH=${BENCH:-$ROOT/.gpu/bin/bench_mita_long}
PLOT_XY=${PLOT_XY:-$ROOT/.gpu/bin/plot_xy}
OUR_LIBS=$ROOT/.gpu/lib:/usr/local/cuda/lib64
ours() { LD_LIBRARY_PATH=$OUR_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
PY=(env -u LD_LIBRARY_PATH python3)
status=0

if [ "$report_only" = 0 ]; then
  [ -x "$BENCH" ] || { echo "bench_fig5: no bench_mita_long (set BENCH or carry .gpu/bundle.tar.xz)" >&2; exit 2; }
  env -u LD_LIBRARY_PATH nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    2>/dev/null | tee "$OUT/gpu.txt" || true
  common=(--iters "$ITERS" --warmup "$WARMUP" --target-s "$TARGET_S")
  echo "== ours: sequence model"
  ours "$BENCH" --ns "$NS" --batch-dense "$BATCH_DENSE" --batch-mita "$BATCH_MITA" --impl "$IMPL" "${common[@]}" \
    --csv "$OUT/ours_model.csv" || { echo "bench_mita_long FAILED" >&2; status=1; }
  echo "== PyTorch SDPA: sequence model"
  "${PY[@]}" scripts/bench_mita_long.py --ns "$NS" --batch-dense "$BATCH_DENSE" "${common[@]}" \
    --csv "$OUT/torch_model.csv" || { echo "bench_mita_long.py FAILED" >&2; status=1; }
  if [ "$LAYER" = 1 ]; then
    echo "== ours: attention layer"
    ours "$BENCH" --layer --impl "$IMPL" "${common[@]}" --csv "$OUT/ours_layer.csv" ||
      { echo "bench_mita_long --layer FAILED" >&2; status=1; }
    echo "== PyTorch SDPA: attention layer"
    "${PY[@]}" scripts/bench_mita_long.py --layer "${common[@]}" --csv "$OUT/torch_layer.csv" ||
      { echo "bench_mita_long.py --layer FAILED" >&2; status=1; }
  fi
fi

"${PY[@]}" - "$OUT" "$(cat "$OUT/gpu.txt" 2>/dev/null || true)" >"$OUT/fig5.md" <<'PYEOF'
import csv, os, sys
out, gpu = sys.argv[1], sys.argv[2]
rows = []
for name in ("ours_model", "torch_model", "ours_layer", "torch_layer"):
    path = os.path.join(out, name + ".csv")
    if os.path.exists(path):
        rows += list(csv.DictReader(open(path)))
PAPER = {16384: 4.7, 65536: 19, 262144: 56, 1048576: 159}
SERIES = {("vitrain", "mita"): "ours MiTA", ("vitrain", "dense"): "ours dense",
          ("torch", "dense"): "PyTorch SDPA dense"}
def key(r):
    return (r["impl"], r["kind"], r["mode"], r["shape"], int(r["N"]))
by = {key(r): r for r in rows}
def sps(r):
    return float(r["samples_per_s"]) if r and not r["error"] and float(r["samples_per_s"]) > 0 else None
def num(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"
def cell(r, with_batch=True):
    if r is None:
        return "—"
    if r["error"]:
        e = r["error"].lower()
        return "failed" + (" (OOM)" if "out of memory" in e else " (unsupported)" if "shared memory" in e else "")
    extra = f" (B {r['batch']}" + (f", m=k={r['m']}" if r["kind"] == "mita" else "") + ")"
    return num(float(r["samples_per_s"])) + (extra if with_batch else "")
def ratio(a, b):
    return f"**{a / b:.1f}×**" if a and b else "n/a"
print(f"GPU: {gpu or 'unknown'}. Figure 5 model: x [B, N, 128] → 3 pre-norm blocks (2 heads, MLP 4) → LayerNorm, "
      "bf16 autocast inference; samples/s = sequences per second. MiTA: m = k = √(N/4), 1-D landmark pooling.\n")
ns = sorted({int(r["N"]) for r in rows if r["mode"] == "model_infer"})
head = ["N", "ours MiTA", "ours dense", "PyTorch SDPA dense", "MiTA / best dense", "MiTA / ours dense",
        "MiTA / SDPA", "paper"]
print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
series_rows = []
for n in ns:
    m, d, t = (by.get((impl, kind, "model_infer", "C128H2", n)) for impl, kind in SERIES)
    best = max([v for v in (sps(d), sps(t)) if v] or [0]) or None
    print("| " + " | ".join([f"{n:,}", cell(m), cell(d), cell(t), ratio(sps(m), best), ratio(sps(m), sps(d)),
                             ratio(sps(m), sps(t)), f"{PAPER[n]}×" if n in PAPER else ""]) + " |")
    for (impl, kind), label in SERIES.items():
        r = by.get((impl, kind, "model_infer", "C128H2", n))
        series_rows.append((label, n, sps(r)))
layer = [r for r in rows if r["mode"].startswith("layer")]
if layer:
    print("\nAttention layer alone (qkv + attention + proj), bf16; ms per batch (lower is better), "
          "B = max(1, 256K / N) at C128/H2; DeiT-S: C 384, H 6, N 197, B 256, MiTA m = k = 25 (shifted 2-D "
          "pooling).\n")
    head = ["shape", "N", "B", "pass", "ours MiTA ms", "ours dense ms", "SDPA ms", "MiTA speed-up vs best dense"]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    keys = sorted({(r["shape"], int(r["N"]), r["mode"]) for r in layer}, key=lambda k: (k[0] != "C128H2", k[1], k[2]))
    for shape, n, mode in keys:
        m, d, t = (by.get((impl, kind, mode, shape, n)) for impl, kind in SERIES)
        ms = lambda r: float(r["ms_per_batch"]) if r and not r["error"] else None
        fmt = lambda r: (num(ms(r)) if ms(r) else cell(r))
        best = min([v for v in (ms(d), ms(t)) if v] or [0]) or None
        batch = next((r["batch"] for r in (m, d, t) if r), "?")
        print("| " + " | ".join([shape, f"{n:,}", str(batch), "fwd" if mode == "layer_fwd" else "fwd+bwd", fmt(m),
                                 fmt(d), fmt(t), ratio(best, ms(m))]) + " |")
with open(os.path.join(out, "fig5_series.csv"), "w") as f:
    f.write("series,x,y\n")
    for label, n, v in series_rows:
        f.write(f"{label},{n},{'' if v is None else v}\n")
PYEOF
cat "$OUT/fig5.md"
if [ -x "$PLOT_XY" ]; then
  ours "$PLOT_XY" "$OUT/fig5_series.csv" "$OUT/fig5.png" --title "Figure 5: throughput against sequence length (bf16 inference)" \
    --x-title "sequence length N (tokens)" --y-title "throughput (sequences/s)" ||
    { echo "plot_xy FAILED" >&2; status=1; }
else
  echo "bench_fig5: no plot_xy at $PLOT_XY; draw later with: build/bin/plot_xy $OUT/fig5_series.csv $OUT/fig5.png"
fi
exit "$status"
