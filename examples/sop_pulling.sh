#!/usr/bin/env bash
# The worked example of docs/proteins.md: the SOP model of PDB 1TII chain D (98 residues;
# Debian's pymol-data installs the file), pulled apart by a force ramp in underdamped Langevin
# dynamics. Writes into DIR (default sop_example/): lt2b.yaml and its files, then the run's
# outputs, among them lt2b.pull.csv and the force-extension curve lt2b.pull.svg.
#   bash examples/sop_pulling.sh [DIR] [extra options for pairmd run, e.g. --backend cuda]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
pairmd=${PAIRMD:-$here/build/pairmd}
pdb=${PAIRMD_SOP_PDB:-/usr/share/pymol/test/dat/1tii.pdb}
dir=${1:-sop_example}
shift || true
[[ -f "$pdb" ]] || { echo "sop_pulling: $pdb is missing: apt-get install pymol-data (or set PAIRMD_SOP_PDB)" >&2; exit 1; }
mkdir -p "$dir" && cd "$dir"
"$pairmd" sop-build "$pdb" --chains D -o lt2b.yaml --overwrite \
  --pull --integrator langevin --pull-speed 1e-4 --pull-spring 0.35 \
  --steps 100000 --pull-every 250 --trajectory-every 5000
"$pairmd" run lt2b.yaml --overwrite "$@"
echo "sop_pulling: the force-extension curve is $dir/lt2b.pull.svg (data: $dir/lt2b.pull.csv)"
