#!/bin/bash
# Force evaluations to max |F| < 1e-4 (reduced units): FIRE (pairmd's `minimize`) against the
# steepest descent of the old system.relax, and, where Debian's `lmp` is installed, LAMMPS's
# own minimisers on the same LAMMPS data file (docs/minimize.md). One OpenMP thread.
#
#   bash bench/minimize_compare.sh build/pairmd OUTDIR
#
# 1. configs/kremer_grest.yaml's melt (40 x 50 beads, random walks that overlap);
# 2. 4000 LJ particles at random places (LAMMPS `create_atoms random`, density 0.8442) read from
#    the data file LAMMPS wrote, LJ cut at 2.5 and shifted.
set -u
pairmd=$(realpath "$1")
out=$2
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out" && cd "$out" || exit 1
export OMP_NUM_THREADS=1

report() {  # the minimiser's report line of `pairmd minimize CONFIG ARGS...`
  "$pairmd" minimize "$@" --overwrite --set output.progress=off 2>&1 | grep '^minimize: [a-z_]* stopped'
}
evaluations() { sed -n 's/.* \([0-9]*\) force evaluations.*/\1/p'; }

echo "== $("$pairmd" --version | head -1), $(date -u +%F), commit $(git -C "$src" rev-parse --short HEAD)"
echo "== 1. Kremer-Grest melt, configs/kremer_grest.yaml"
sed 's/^minimize: .*/minimize: {ftol: 1.0e-4, max_iterations: 200000, max_evaluations: 200000}/' \
  "$src/configs/kremer_grest.yaml" > kg.yaml
fire=$(report kg.yaml --output kg)
echo "FIRE (defaults):         $fire"
echo "FIRE (alpha0 0.25):      $(report kg.yaml --output kg --set minimize.alpha0=0.25)"
n=$(echo "$fire" | evaluations)
sd="--set minimize.algorithm=steepest_descent --set minimize.max_move=0.01"
echo "old relax (2000 steps):  $(report kg.yaml --output kg $sd --set minimize.max_evaluations=2001)"
echo "old relax, FIRE's count: $(report kg.yaml --output kg $sd --set minimize.max_evaluations="$n")"
echo "old relax, 200000:       $(report kg.yaml --output kg $sd)"

echo "== 2. 4000 LJ particles at random places, from a LAMMPS data file"
if ! command -v lmp > /dev/null; then
  echo "skipped: no lmp (Debian's lammps package) to write the data file"
  exit 0
fi
cat > make.in << 'EOF'
units lj
atom_style atomic
region box block 0 16.796 0 16.796 0 16.796
create_box 1 box
create_atoms 1 random 4000 12345 NULL
mass 1 1.0
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
write_data random.data
EOF
lmp -in make.in -log none -screen none
cat > lj.yaml << 'EOF'
units: lj
system:
  types: [{name: A, mass: 1.0}]
  file: {path: random.data}
minimize: {ftol: 1.0e-4, max_iterations: 100000, max_evaluations: 100000}
force_field:
  pair:
    - {potential: lj, cutoff: 2.5, shift: true, coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]}
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, friction: 1.0, seed: 3}
neighbor: {skin: 0.3}
EOF
fire=$(report lj.yaml --output lj)
echo "FIRE (defaults):         $fire"
n=$(echo "$fire" | evaluations)
sd="--set minimize.algorithm=steepest_descent --set minimize.max_move=0.02"
echo "old relax, FIRE's count: $(report lj.yaml --output lj $sd --set minimize.max_evaluations="$n")"
echo "old relax, 20000:        $(report lj.yaml --output lj $sd --set minimize.max_evaluations=20000)"
for style in cg fire; do
  cat > "min_$style.in" << EOF
units lj
atom_style atomic
pair_style lj/cut 2.5
read_data random.data
pair_modify shift yes
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
timestep 0.005
min_style $style
min_modify norm max
minimize 0.0 1.0e-4 100000 100000
EOF
  echo "LAMMPS min_style $style, $(lmp -in /dev/null -log none 2>&1 | head -1):"
  lmp -in "min_$style.in" -log none 2>&1 |
    grep -E 'ERROR|Stopping criterion|Force max component|Iterations, force evaluations|Loop time' | sed 's/^/  /'
done
