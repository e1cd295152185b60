#!/bin/bash
# Where two CPU threads start to beat one (base/host_threads.h, kParticlesPerThread): the LJ
# liquid of configs/lj_liquid.yaml at several sizes, one thread against two waiting passively,
# interleaved, ROUNDS times, with no load of its own or beside `stress -c 2` (busy).
#
#   NEW=build/pairmd bench/cpu_threads_crossover.sh ROUNDS OUT.csv [busy]
set -u
rounds=${1:-5} out=${2:-crossover.csv} cond=${3:-idle}
NEW=${NEW:?this pairmd}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -f lj.yaml ] || cp "$here/configs/lj_liquid.yaml" lj.yaml
[ -f "$out" ] || echo "date,round,condition,particles,threads,steps_per_s,load1" > "$out"
sp=""
if [ "$cond" = busy ]; then
  stress -c 2 > /dev/null 2>&1 &
  sp=$!
  sleep 2
fi
for r in $(seq 1 "$rounds"); do
  for cells in 4 5 6 7 8 10; do
    n=$((4 * cells * cells * cells))
    steps=$((2000000 / n))
    for t in $([ $((r % 2)) = 1 ] && echo 1 2 || echo 2 1); do
      load=$(cut -d' ' -f1 /proc/loadavg)
      o=$(env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive OMP_NUM_THREADS=$t "$NEW" run lj.yaml --backend cpu \
        --set system.lattice.cells=$cells --set neighbor.skin=0.3 --steps $steps --output x --overwrite 2>&1)
      rate=$(echo "$o" | sed -n 's/^performance: .* = \([0-9.]*\) steps\/s.*/\1/p')
      echo "$(date -u +%FT%TZ),$r,$cond,$n,$t,$rate,$load" >> "$out"
    done
  done
done
if [ -n "$sp" ]; then
  pkill -P "$sp"
  kill "$sp"
  wait "$sp" 2> /dev/null
fi
