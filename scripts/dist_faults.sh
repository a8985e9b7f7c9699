#!/usr/bin/env bash
# Failure handling of a 2-GPU job, on the same small Fashion-MNIST DeiT-Tiny-shaped run as
# scripts/dist_equivalence.sh:
#   1. kill one rank: a long 2-rank `vitrain launch` training job; after a few updates rank 1 gets SIGKILL. The
#      launcher must stop rank 0 (blocked in NCCL) and exit non-zero naming rank 1, within the grace period.
#   2. resume: a 2-rank f32 job stopped by train.max_steps after 10 updates, resumed with --resume auto to 20,
#      against the same job run uninterrupted to 20: the losses of updates 11..20 must be identical.
# Needs ≥ 2 GPUs and vitrain (VITRAIN, else vitrain on PATH, else build/bin/vitrain).
# usage: scripts/dist_faults.sh OUT_DIR   (env: DATA=fashion-mnist dir, B=per-GPU batch (32))
set -euo pipefail
out=${1:?usage: scripts/dist_faults.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
vitrain=${VITRAIN:-$(command -v vitrain || echo "$root/build/bin/vitrain")}
b=${B:-32}
data=${DATA:-/usr/share/datasets/fashion-mnist}
[[ -e $data ]] || data=$root/.gpu-data/fashion-mnist
[[ -e $data ]] || { echo "no Fashion-MNIST at /usr/share/datasets/fashion-mnist or .gpu-data (DATA=...)" >&2; exit 2; }
mkdir -p "$out"
status=0

# The Fashion-MNIST base of the tests (the defaults are DeiT's ImageNet recipe), then this rig's settings.
common=(--config "$root/tests/fmnist_base.yaml" --set model.name=deit_tiny_patch16_224 --set model.img_size=28 --set model.patch_size=4
        --set model.in_chans=1 --set model.num_classes=10 --set model.drop_rate=0 --set model.drop_path_rate=0
        --set data.dataset=fashion_mnist --set data.data_dir="$data" --set data.hflip=0
        --set data.train_limit=2048 --set data.test_limit=500 --set train.batch_size="$b"
        --set optim.lr=5e-4 --set schedule.warmup_epochs=0.2 --set train.log_interval=1 --set train.seed=0
        --set train.model_ema=false --set eval.batch_size=250 --set train.amp=false)

echo "== 1. kill rank 1 of a running 2-rank job"
dir=$out/kill
rm -rf "$dir"
"$vitrain" launch -n 2 --grace-period 10 -- train "${common[@]}" --set train.epochs=1000 --set train.output="$dir" \
  --device cuda > "$dir.log" 2>&1 &
launcher=$!
for _ in $(seq 600); do  # up to 60 s for 5 logged updates
  [[ -f $dir/metrics.jsonl ]] && (($(grep -c train_loss "$dir/metrics.jsonl") >= 5)) && break
  sleep 0.1
done
victim=""
for p in $(pgrep -P "$launcher"); do
  tr '\0' '\n' < "/proc/$p/environ" | grep -qx RANK=1 && victim=$p
done
if [[ -z $victim ]]; then
  echo "FAIL: rank 1's process not found"; kill "$launcher"; exit 1
fi
t0=$(date +%s.%N)
kill -9 "$victim"
set +e
timeout 60 tail --pid="$launcher" -f /dev/null
wait "$launcher"
rc=$?
set -e
t1=$(date +%s.%N)
echo "launcher exit code $rc, $(python3 -c "print(f'{$t1 - $t0:.1f}')") s after the kill"
grep "launch:" "$dir.log" | tee "$out/kill_summary.txt"
if ((rc != 0)) && grep -q "rank 1 was killed by signal 9" "$dir.log" && ! pgrep -f "train.output=$dir" > /dev/null; then
  echo "PASS: the job ended with rank 1 named and no rank left behind" | tee -a "$out/kill_summary.txt"
else
  echo "FAIL: expected a non-zero exit naming rank 1" | tee -a "$out/kill_summary.txt"; status=1
fi

echo "== 2. resume a 2-rank job from its checkpoint"
run() {  # dir max_steps [extra args]
  "$vitrain" launch -n 2 -- train "${common[@]}" --set train.epochs=100 --set train.output="$1" \
    --set train.max_steps="$2" "${@:3}" --device cuda >> "$1.log" 2>&1 || { tail -20 "$1.log"; return 1; }
}
rm -rf "$out/whole" "$out/resumed" "$out/whole.log" "$out/resumed.log"
run "$out/whole" 20
run "$out/resumed" 10
run "$out/resumed" 20 --resume auto
python3 - "$out/whole/metrics.jsonl" "$out/resumed/metrics.jsonl" <<'PY' | tee "$out/resume_compare.txt" || status=1
import json, sys
def losses(path):
    return {int(r["step"]): r["train_loss"] for r in map(json.loads, open(path)) if "train_loss" in r}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
steps = [s for s in sorted(a) if s > 10]
same = all(s in b and a[s] == b[s] for s in steps)
for s in steps:
    print(f"{s:3d}  uninterrupted {a[s]:.9f}  resumed {b.get(s, float('nan')):.9f}")
print(("PASS" if same and len(steps) == 10 else "FAIL") + f": updates 11..20 identical after resume ({len(steps)} compared)")
sys.exit(0 if same and len(steps) == 10 else 1)
PY
exit $status
