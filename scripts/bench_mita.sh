#!/usr/bin/env bash
# MiTA against dense attention on one GPU, in one job: our MiTA, our dense (flash) attention and PyTorch
# (scaled_dot_product_attention under each of its flash / memory-efficient / cuDNN backends, the fastest reported)
# for five workloads, each cell the median of 3 timed windows with their min–max:
#   a  DeiT-T and DeiT-S (N = 197), batch 256: training and inference (ours, timm eager; with TIMM_COMPILE=1 also
#      torch.compile's default, reduce-overhead and max-autotune modes)  vitrain bench, scripts/bench_timm.py
#   b  Segmenter ViT-S + CBT at 512² (N = 1025), batch 8: training and evaluation windows, bf16 (and f32)
#                                                              vitrain bench -c, scripts/bench_segmenter_torch.py
#   c  the LRA model shape (2 layers, dim 64, 2 heads, MLP 128), batch 32, MiTA m = k = 128: training steps/s at
#      N = 1K, 2K, 4K (PyTorch eager, torch.compile default and reduce-overhead)
#                                                              vitrain bench --sequence, bench_sequence_torch.py
#   e  the Figure 5 model (3 blocks, dim 128, 2 heads, MLP ×4, m = k = √(N/4)) training at N = 64K, 256K, batch 1
#   d  Figure 5 inference, N = 1K..1M, the batch tuned per N for every implementation (two batch lists each up
#      to 16K, the anchors' list beyond)                       tools/bench_mita_long, scripts/bench_mita_long.py
# (run in the order a b c e d: the 1M dense inference is the slowest measurement and comes last).
#   bash scripts/bench_mita.sh OUT_DIR           QUICK=1 bash scripts/bench_mita.sh OUT_DIR   (~4 min)
# Run on the GPU machine from the repo root with .gpu/bundle.tar.xz (scripts/gpu_bundle.sh) carried: it is
# unpacked here (or set VITRAIN and BENCH_LONG). Also fine as gpu_check.sh's extra command:
#   VT_GPU_TESTS=none bash scripts/gpu_check.sh bash scripts/bench_mita.sh "$OUT"/mita
# Every measurement fails soft: an error (or a time cap) becomes an error row and the run goes on. Each command
# runs under a time cap; the parts share BUDGET_S seconds (a part that finishes early leaves its time to the next).
# Writes OUT_DIR/mita_bench.jsonl (one measurement per line), mita_bench.csv, mita_bench.md (the tables, ratios
# MiTA / best dense) and mita_bench.log. APPEND=BENCHMARKS.md appends the tables as a dated section;
# RAW_COPY=benchmarks/raw copies the raw files into RAW_COPY/<date>-<commit>/ (both also possible later with
# scripts/bench_mita_table.py report).
# Env: QUICK (0), PARTS ("a b c e d"), BUDGET_S (500; QUICK 230), SDPA_BACKENDS ("flash efficient cudnn"),
#      SEG_PRECISIONS, LRA_NS, LONG_NS (space-separated), FIG5_NS (comma-separated): the sizes of parts b-e,
#      TIMM_COMPILE (0), LRA_COMPILE_MODES (torch.compile's modes for part c's PyTorch peer: "compile
#      reduce-overhead"; add max-autotune for the slowest to tune), VITRAIN_ARGS (extra `vitrain bench` options for
#      parts a-c and e, e.g. --cuda-graph).
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
OUT=$(mkdir -p "$1" && cd "$1" && pwd)
ROWS=$OUT/mita_bench.jsonl
LOG=$OUT/mita_bench.log
: >"$ROWS"
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1
RAW=$(mktemp -d)
trap 'rm -rf "$RAW"' EXIT

QUICK=${QUICK:-0}
PARTS=${PARTS:-"a b c e d"}
SDPA_BACKENDS=${SDPA_BACKENDS:-"flash efficient cudnn"}
TIMM_COMPILE=${TIMM_COMPILE:-0}
LRA_COMPILE_MODES=${LRA_COMPILE_MODES:-"compile reduce-overhead"}
if [ "$QUICK" = 1 ]; then
  BUDGET_S=${BUDGET_S:-230}
  WARMUP=3 STEPS=10 SEG_STEPS=5 SEQ_STEPS=20
  SEG_PRECISIONS=${SEG_PRECISIONS:-bf16} LRA_NS=${LRA_NS:-"1024 4096"} LONG_NS=${LONG_NS:-65536}
  FIG5_NS=${FIG5_NS:-1024,16384,262144} FIG5_TARGET=0.2
else
  BUDGET_S=${BUDGET_S:-500}
  WARMUP=10 STEPS=30 SEG_STEPS=15 SEQ_STEPS=50
  SEG_PRECISIONS=${SEG_PRECISIONS:-"bf16 f32"} LRA_NS=${LRA_NS:-"1024 2048 4096"} LONG_NS=${LONG_NS:-"65536 262144"}
  FIG5_NS=${FIG5_NS:-1024,4096,16384,65536,262144,1048576} FIG5_TARGET=0.3
fi
REPEATS=3
# Seconds of the budget each part may use (plus what the parts before it left).
declare -A SHARE=([a]=80 [b]=75 [c]=110 [e]=85 [d]=150)
[ "$QUICK" = 1 ] && SHARE=([a]=45 [b]=35 [c]=65 [e]=30 [d]=55)

# ---- binaries, commit, GPU ----
if [ -z "${VITRAIN:-}" ] && [ -f .gpu/bundle.tar.xz ]; then
  rm -rf .gpu/bin .gpu/lib && tar -C .gpu -xJf .gpu/bundle.tar.xz  # a warm machine may keep an older .gpu/bin
fi
VITRAIN=${VITRAIN:-$ROOT/.gpu/bin/vitrain}
BENCH_LONG=${BENCH_LONG:-$(dirname "$VITRAIN")/bench_mita_long}
OUR_ENV=(env "LD_LIBRARY_PATH=$ROOT/.gpu/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
PY=(env -u LD_LIBRARY_PATH python3)
TABLE=("${PY[@]}" "$ROOT/scripts/bench_mita_table.py")
COMMIT=$(sed -n 's/^git_rev=//p' .gpu/manifest.txt 2>/dev/null)  # the binaries' commit
[ -n "$COMMIT" ] || COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
GPU=$(env -u LD_LIBRARY_PATH nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
      head -1)
echo "== bench_mita $(date -u +%Y-%m-%dT%H:%M:%SZ): commit $COMMIT, ${GPU:-no nvidia-smi}, QUICK=$QUICK," \
     "parts: $PARTS, budget ${BUDGET_S}s"
[ -x "$VITRAIN" ] || echo "bench_mita: no vitrain binary at $VITRAIN (carry .gpu/bundle.tar.xz or set VITRAIN):" \
  "every 'ours' row will be an error"

# ---- time caps ----
START=$(date +%s)
PART_END=$START
now() { date +%s; }
# begin_part P: the part's deadline is its share after the later of now and the previous part's deadline.
begin_part() {
  local t; t=$(now)
  PART_END=$(( (PART_END > t ? PART_END : t) + ${SHARE[$1]} ))
  (( PART_END > START + BUDGET_S )) && PART_END=$((START + BUDGET_S))
  echo
  echo "== part $1 (until +$((PART_END - START))s of ${BUDGET_S}s; $(( $(now) - START ))s used)"
}
# run_capped CAP CMD...: CMD under the smaller of CAP and the part's time left; output to the log and
# $RAW/last.out. Status 124/137: stopped by the cap; 125: not started, no time left.
run_capped() {
  local cap=$1; shift
  local left=$(( PART_END - $(now) ))
  (( cap > left )) && cap=$left
  if (( cap < 5 )); then
    echo "skipped (time budget spent): $*" | tee "$RAW/last.out"
    return 125
  fi
  echo "\$ $* (cap ${cap}s)"
  timeout --kill-after=10 "$cap" "$@" 2>&1 | tee "$RAW/last.out"
  return "${PIPESTATUS[0]}"
}
# error_text RC: why the last command failed ("" when it did not).
error_text() {
  case $1 in
    0) ;;
    124|137) echo "stopped by its time cap" ;;
    125) echo "skipped: the time budget was spent" ;;
    *) local line
       line=$(grep -E '^error:|Error:|error:|FAILED|No available kernel' "$RAW/last.out" | tail -1)
       [ -n "$line" ] || line=$(grep -v '^\s*$' "$RAW/last.out" | tail -1)
       echo "exit $1: $line" ;;
  esac
}
# ingest RC SOURCE [ingest options...] -- FILES...: rows from the last command's output files.
ingest() {
  local rc=$1 source=$2; shift 2
  local opts=() err
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  err=$(error_text "$rc")
  local stopped=()
  case $rc in 124|125|137) stopped=(--stopped) ;; esac
  "${TABLE[@]}" ingest --rows "$ROWS" --source "$source" --commit "$COMMIT" --gpu "$GPU" --error "$err" \
    "${stopped[@]}" "${opts[@]}" "$@" || echo "bench_mita: could not record the rows of that command"
}
# vt_bench PART MODEL IMPL N BATCH UNIT MODES CAP -- vitrain bench options...
vt_bench() {
  local part=$1 model=$2 impl=$3 N=$4 batch=$5 unit=$6 modes=$7 cap=$8; shift 9
  rm -f "$RAW/vt.jsonl"
  # shellcheck disable=SC2086  # VITRAIN_ARGS is a list of options
  run_capped "$cap" "${OUR_ENV[@]}" "$VITRAIN" bench "$@" --repeats "$REPEATS" --device cuda:0 \
    --json "$RAW/vt.jsonl" ${VITRAIN_ARGS:-}
  ingest $? vitrain --part "$part" --model "$model" --impl "$impl" --N "$N" --batch "$batch" --unit "$unit" \
    --precision "${PRECISION:-bf16}" --modes "$modes" -- "$RAW/vt.jsonl"
}

# ---- a: DeiT-T / DeiT-S ----
part_a() {
  local model attention modes="eager"
  for model in deit_tiny_patch16_224 deit_small_patch16_224; do
    for attention in dense mita; do
      vt_bench a "$model" "ours-$attention" 197 256 img/s train,infer 60 -- --model "$model" \
        --attention "$attention" --batch-size 256 --steps "$STEPS" --warmup "$WARMUP" --amp --infer
    done
  done
  local cap=240
  [ "$TIMM_COMPILE" = 1 ] && modes="eager compile reduce-overhead max-autotune" && cap=900  # max-autotune tunes long
  rm -f "$RAW/timm.jsonl"
  # shellcheck disable=SC2086
  run_capped "$cap" "${PY[@]}" scripts/bench_timm.py --models deit_tiny_patch16_224 deit_small_patch16_224 \
    --modes $modes --batch-size 256 --steps "$STEPS" --warmup "$WARMUP" --repeats "$REPEATS" --fused-adamw \
    --sdpa-backends $SDPA_BACKENDS --out "$RAW/timm.jsonl"
  ingest $? timm --part a --model "deit (timm)" --model-from-line --impl timm-eager --N 197 --batch 256 \
    --modes train,infer -- "$RAW/timm.jsonl"
}

# ---- b: Segmenter ViT-S + CBT at 512² ----
part_b() {
  local precision attention amp backends
  for precision in $SEG_PRECISIONS; do
    amp=$([ "$precision" = bf16 ] && echo true || echo false)
    for attention in dense mita; do
      PRECISION=$precision vt_bench b segmenter_vit_s_cbt "ours-$attention" 1025 8 img/s train,infer 60 -- \
        -c "configs/ade20k/vit_small_$attention.yaml" --set "train.amp=$amp" --steps "$SEG_STEPS" \
        --warmup "$WARMUP"
    done
    # Flash and cuDNN attention take only half precision: f32 runs the memory-efficient backend.
    backends=$([ "$precision" = bf16 ] && echo "$SDPA_BACKENDS" || echo efficient)
    rm -f "$RAW/seg.jsonl"
    # shellcheck disable=SC2046,SC2086
    run_capped 120 "${PY[@]}" scripts/bench_segmenter_torch.py --backbone vit_small_patch16_384 --img 512 \
      --batch 8 --steps "$SEG_STEPS" --warmup "$WARMUP" --repeats "$REPEATS" --modes eager \
      --sdpa-backends $backends $([ "$precision" = bf16 ] && echo --amp) --out "$RAW/seg.jsonl"
    ingest $? timm --part b --model segmenter_vit_s_cbt --impl torch-eager --N 1025 --batch 8 --precision "$precision" \
      --modes train,infer -- "$RAW/seg.jsonl"
  done
}

# ---- c: LRA-shaped training ----
part_c() {
  local N attention
  for N in $LRA_NS; do
    for attention in dense mita; do
      vt_bench c lra "ours-$attention" "$N" 32 steps/s train 40 -- --sequence "$N" --depth 2 --dim 64 \
        --heads 2 --mlp-ratio 2 --attention "$attention" --m 128 --k 128 --batch-size 32 --steps "$SEQ_STEPS" \
        --warmup "$WARMUP" --amp
    done
  done
  rm -f "$RAW/lra.jsonl"
  # shellcheck disable=SC2086  # LRA_COMPILE_MODES is a list
  run_capped 300 "${PY[@]}" scripts/bench_sequence_torch.py --part c --model lra --dim 64 --depth 2 --heads 2 \
    --mlp-ratio 2 --ns "${LRA_NS// /,}" --batch 32 --steps "$SEQ_STEPS" --warmup "$WARMUP" --repeats "$REPEATS" \
    --backends "${SDPA_BACKENDS// /,}" --compile --compile-modes $LRA_COMPILE_MODES --out "$RAW/lra.jsonl"
  ingest $? rows --part c --model lra --impl torch-eager --unit steps/s --batch 32 -- "$RAW/lra.jsonl"
}

# ---- e: long-sequence training, batch 1 ----
part_e() {
  local N attention mk steps
  for N in $LONG_NS; do
    mk=$(awk -v n="$N" 'BEGIN { printf "%d", 2 ^ int(log(sqrt(n / 4)) / log(2) + 0.5) }')  # figure5_mita_budget
    steps=$(( N > 65536 ? 2 : 5 ))
    for attention in mita dense; do
      vt_bench e fig5 "ours-$attention" "$N" 1 steps/s train 60 -- --sequence "$N" --depth 3 --dim 128 \
        --heads 2 --mlp-ratio 4 --attention "$attention" --m "$mk" --k "$mk" --batch-size 1 --steps "$steps" \
        --warmup 1 --amp
    done
  done
  rm -f "$RAW/long.jsonl"
  run_capped 150 "${PY[@]}" scripts/bench_sequence_torch.py --part e --model fig5 --dim 128 --depth 3 --heads 2 \
    --mlp-ratio 4 --ns "${LONG_NS// /,}" --batch 1 --steps 2 --warmup 1 --repeats "$REPEATS" \
    --backends "${SDPA_BACKENDS// /,}" --out "$RAW/long.jsonl"
  ingest $? rows --part e --model fig5 --impl torch-eager --unit steps/s --batch 1 -- "$RAW/long.jsonl"
}

# ---- d: Figure 5 inference ----
part_d() {
  local common=(--iters 20 --warmup 2 --target-s "$FIG5_TARGET" --repeats "$REPEATS")
  local short_ns best
  # Two batch lists per implementation; the second only up to 16K (beyond, dense attention is compute-bound and
  # a batch of 1 is as fast per sample as any).
  short_ns=$(echo "$FIG5_NS" | tr ',' '\n' | awk '$1 <= 16384' | paste -sd,)
  local dense1=64,16,4,1,1,1 mita1=256,128,64,32,8,2 dense2=256,64,16 mita2=512,256,128
  if [ "$QUICK" = 1 ]; then dense1=64,4,1 mita1=256,64,8; short_ns=""; fi
  run_capped 150 "${OUR_ENV[@]}" "$BENCH_LONG" --ns "$FIG5_NS" --batch-dense "$dense1" --batch-mita "$mita1" \
    "${common[@]}" --csv "$RAW/ours1.csv"
  ingest $? mita_long --part d --model fig5 --impl ours-dense,ours-mita --unit samples/s --modes infer -- "$RAW/ours1.csv"
  if [ -n "$short_ns" ]; then
    run_capped 60 "${OUR_ENV[@]}" "$BENCH_LONG" --ns "$short_ns" --batch-dense "$dense2" --batch-mita "$mita2" \
      "${common[@]}" --csv "$RAW/ours2.csv"
    ingest $? mita_long --part d --model fig5 --impl ours-dense,ours-mita --unit samples/s --modes infer -- "$RAW/ours2.csv"
  fi
  # PyTorch: every backend up to 256K; at 1M only the backend that was fastest at 256K (one call takes seconds).
  local torch_ns; torch_ns=$(echo "$FIG5_NS" | tr ',' '\n' | awk '$1 < 1048576' | paste -sd,)
  run_capped 120 "${PY[@]}" scripts/bench_mita_long.py --ns "$torch_ns" --batch-dense "$dense1" \
    --backends "${SDPA_BACKENDS// /,}" "${common[@]}" --csv "$RAW/torch1.csv"
  ingest $? mita_long --part d --model fig5 --impl torch-eager --unit samples/s --modes infer -- "$RAW/torch1.csv"
  if [ -n "$short_ns" ]; then
    run_capped 60 "${PY[@]}" scripts/bench_mita_long.py --ns "$short_ns" --batch-dense "$dense2" \
      --backends "${SDPA_BACKENDS// /,}" "${common[@]}" --csv "$RAW/torch2.csv"
    ingest $? mita_long --part d --model fig5 --impl torch-eager --unit samples/s --modes infer -- "$RAW/torch2.csv"
  fi
  if [[ ",$FIG5_NS," == *,1048576,* ]]; then
    best=$("${TABLE[@]}" best-backend "$RAW/torch1.csv" --N 262144 --fallback flash)
    run_capped 90 "${PY[@]}" scripts/bench_mita_long.py --ns 1048576 --batch-dense 1 --backends "$best" \
      "${common[@]}" --csv "$RAW/torch3.csv"
    ingest $? mita_long --part d --model fig5 --impl torch-eager --N 1048576 --batch 1 --unit samples/s \
      --modes infer -- "$RAW/torch3.csv"
  fi
}

for part in $PARTS; do
  if ! declare -F "part_$part" >/dev/null; then
    echo "bench_mita: unknown part '$part' (a b c d e)"
    continue
  fi
  begin_part "$part"
  "part_$part"
done

echo
echo "== report ($(( $(now) - START ))s)"
note=""
[ "$QUICK" = 1 ] && note="QUICK=1 run (fewer steps and sizes): a check of the benchmark, not a result."
extra_copy=()
[ -n "${RAW_COPY:-}" ] && extra_copy=(--copy-raw "$RAW_COPY" --extra "$LOG")
"${TABLE[@]}" report "$ROWS" --csv "$OUT/mita_bench.csv" --md "$OUT/mita_bench.md" --gpu "$GPU" \
  --command "$([ "$QUICK" = 1 ] && echo "QUICK=1 ")bash scripts/bench_mita.sh OUT" --note "$note" \
  ${APPEND:+--append "$APPEND"} "${extra_copy[@]}" >/dev/null
cat "$OUT/mita_bench.md"
failed=$(grep -c '"error": "[^"]' "$ROWS")
echo "bench_mita: $(wc -l <"$ROWS") measurements, $failed failed; $(( $(now) - START ))s; files in $OUT"
[ "$failed" = 0 ]
