#!/usr/bin/env bash
# One command from a fresh Debian machine to a finished simulation: set-up (dependencies,
# configure, build), then the default example, the LJ liquid (about 15 s on two CPU cores, or
# a second on a GPU). Outputs go to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
cd out
# --overwrite: a second quickstart replaces the outputs of the first (pairmd run refuses to
# replace files of an earlier run unless asked to; docs/output.md).
../build/pairmd run ../configs/lj_liquid.yaml --overwrite "$@"
echo
echo "quickstart: outputs in out/: lj_liquid.thermo.csv, lj_liquid.h5 (H5MD trajectory), lj_liquid.checkpoint.h5"
echo "quickstart: plot them with: /usr/bin/python3 examples/plot_energies.py out/lj_liquid.h5 out/lj_liquid_energies.png"
