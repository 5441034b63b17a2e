#!/usr/bin/env bash
# Round 2 torture table: every backend x seeds 1..3, 10 minutes each, at most 5 runs at once, starts
# spaced 20 s apart (worker start-up is the heavy part on a shared 2-core machine).
# Usage: test/torture/results/run-round2.sh <out-dir> [duration=10m] [workers=6]
set -u
OUT=${1:?out dir}; DURATION=${2:-10m}; WORKERS=${3:-6}; MAX=5; GAP=20
mkdir -p "$OUT"
cd "$(dirname "$0")/../../.."
JOBS=()
for seed in 1 2 3; do
  for b in zookeeper etcd postgres mysql redlock redis memory; do JOBS+=("$b:$seed"); done
done
# Or only the runs named on the command line after the first three arguments (backend:seed ...).
if [ $# -gt 3 ]; then JOBS=("${@:4}"); fi
running=0
for job in "${JOBS[@]}"; do
  b=${job%%:*}; seed=${job##*:}
  while [ "$(jobs -rp | wc -l)" -ge "$MAX" ]; do sleep 5; done
  echo "$(date -u +%T) start $b seed $seed (load: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT/schedule.log"
  (
    npm run -s torture -- --backend "$b" --seed "$seed" --duration "$DURATION" --workers "$WORKERS" \
      --report "$OUT/$b-$seed.json" > "$OUT/$b-$seed.log" 2>&1
    code=$?
    echo "$(date -u +%T) end $b seed $seed exit $code (load: $(cut -d' ' -f1-3 /proc/loadavg))" >> "$OUT/schedule.log"
  ) &
  sleep "$GAP"
done
wait
echo "$(date -u +%T) all done" >> "$OUT/schedule.log"
