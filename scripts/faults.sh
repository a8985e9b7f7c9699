#!/usr/bin/env bash
# Fault trials: every way a user, a cluster or a disk can hurt a run, repeated on generated data (a Fashion-MNIST-
# shaped IDX set and a small ImageFolder tree), each trial classified as a crash, an unclear error or data lost:
#   kill -9 + resume     kill -9 at random moments (1-3 times), then --resume auto: the weights and metrics.jsonl of
#                        an uninterrupted run, bit for bit
#   stop signals         SIGTERM / SIGINT / SIGUSR1 mid-run: exit 128 + signal, recovery.safetensors named, exact
#                        resume
#   image files          PNG/JPEG bombs, truncated, corrupt, empty and non-image files in train/ and val/: `data
#                        check` names each, training skips and counts them, evaluation leaves them out
#   damaged checkpoints  a flipped data byte, a flipped header byte, a truncated file: eval fails naming the file
#                        (and tensor), --resume auto falls back to a checkpoint that verifies
#   hostile configs      inf/nan/huge/negative values, wrong types, unknown keys, empty or broken files: one error
#                        naming the key or file
# Prints one table (category | trials | crashes | unclear errors | data lost) and exits 1 if any cell but trials
# is non-zero; OUT/failures.txt says what went wrong, OUT/logs/ holds every run's output.
# usage: scripts/faults.sh OUT   (env: TRIALS per category (3), SEED, EPOCHS (2), TRAIN_IMAGES (1600),
#        VITRAIN (else build/bin/vitrain), FAULT_IMAGES (else build/bin/fault_images: ninja -C build fault_images))
set -euo pipefail
out=${1:?usage: scripts/faults.sh OUT}
root=$(cd "$(dirname "$0")/.." && pwd)
vitrain=${VITRAIN:-$root/build/bin/vitrain}
images=${FAULT_IMAGES:-$root/build/bin/fault_images}
for b in "$vitrain" "$images"; do
  [[ -x $b ]] || { echo "faults.sh: $b not built (ninja -C build vitrain fault_images)" >&2; exit 2; }
done
exec python3 "$root/scripts/faults.py" "$out" --vitrain "$vitrain" --fault-images "$images" --root "$root"
