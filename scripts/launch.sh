#!/usr/bin/env bash
# One rank per local GPU: scripts/launch.sh -n GPUS [--master-port P] -- vitrain train --config c.yaml ...
# A thin wrapper over `vitrain launch` (torchrun-style variables, NCCL_NVLS_ENABLE=0 unless set, signals
# forwarded, every rank stopped when one fails). The binary is the one named after -- (a path, or `vitrain` on
# PATH); without one, $VITRAIN or build/bin/vitrain runs the command after --.
set -euo pipefail
usage="usage: scripts/launch.sh -n GPUS [--master-port P] -- vitrain train --config c.yaml ..."
opts=()
while (($#)) && [[ $1 != -- ]]; do
  opts+=("$1")
  shift
done
[[ ${1:-} == -- ]] || { echo "$usage" >&2; exit 2; }
shift
vitrain=${VITRAIN:-$(cd "$(dirname "$0")/.." && pwd)/build/bin/vitrain}
if (($#)) && [[ $(basename -- "$1") == vitrain ]]; then
  vitrain=$1
  shift
fi
exec "$vitrain" launch "${opts[@]}" -- "$@"
