#!/usr/bin/env python3
"""The force error of OpenMM's PME on the periodic polyelectrolyte, measured: what accuracy a PME
benchmark against OpenMM compares at (issue #35: "same accuracy, same job").

The Coulomb forces of a pairmd state (H5MD, e.g. frame 0 of configs/polyelectrolyte_pme.yaml) from
OpenMM's NonbondedForce, Reference platform (double precision): PME with OpenMM's own grid for
ewaldErrorTolerance = delta (as its users run it), and PME at the grid pairmd's rule gives for
order 5 (potentials/pme.h; what bench/openmm_pme.py's default sets), against a converged Ewald
sum (NonbondedForce.Ewald, tolerance 1e-10). The error is the relative rms force error,
sqrt(sum |F - F_ref|^2 / sum |F_ref|^2), the measure pairmd's accuracy means (potentials/pme.h).
The grid spacing, not N, sets the error, so the 900-particle example stands for 64k and 256k.

With --pairmd COUL.h5 (a pairmd trajectory of the same frame with the Coulomb term alone and
trajectory.forces_every: 1, frame 0), pairmd's forces are measured against the same reference.

usage: openmm_pme_accuracy.py STATE.h5 [--pairmd COUL.h5] [--accuracy 1e-5,...] [--cutoff 6]
Needs the openmm wheel, NumPy and h5py; runs on the CPU.
"""
import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openmm_pme import COULOMB, load_state, pairmd_pme_parameters  # noqa: E402


def coulomb_forces(mm, unit, state, cutoff, method, tolerance, pme=None):
    pos, charge, edges, _ = state
    system = mm.System()
    system.setDefaultPeriodicBoxVectors(mm.Vec3(edges[0], 0, 0), mm.Vec3(0, edges[1], 0), mm.Vec3(0, 0, edges[2]))
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(method)
    nb.setCutoffDistance(cutoff)
    nb.setUseDispersionCorrection(False)
    nb.setEwaldErrorTolerance(tolerance)
    if pme:
        nb.setPMEParameters(*pme)
    scale = math.sqrt(2.0 / COULOMB)
    for q in charge:
        system.addParticle(1.0)
        nb.addParticle(float(q) * scale, 1.0, 0.0)
    system.addForce(nb)
    context = mm.Context(system, mm.VerletIntegrator(0.001), mm.Platform.getPlatformByName("Reference"))
    context.setPositions([mm.Vec3(*p) for p in pos] * unit.nanometer)
    s = context.getState(getForces=True)
    used = nb.getPMEParametersInContext(context) if method == mm.NonbondedForce.PME else None
    return np.array(s.getForces(asNumpy=True).value_in_unit(unit.kilojoule_per_mole / unit.nanometer)), used


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("state")
    ap.add_argument("--accuracy", default="1e-5,5e-6,2.5e-6")
    ap.add_argument("--cutoff", type=float, default=6.0)
    ap.add_argument("--pairmd", default="", help="pairmd's Coulomb-only trajectory with forces")
    args = ap.parse_args()
    import openmm as mm
    from openmm import unit

    state = load_state(args.state)
    ref, _ = coulomb_forces(mm, unit, state, args.cutoff, mm.NonbondedForce.Ewald, 1e-10)
    norm = math.sqrt((ref * ref).sum())
    print(f"OpenMM {mm.__version__} Reference platform; {len(state[1])} particles, box {state[2][0]:.4f}, "
          f"rc {args.cutoff}; against Ewald at tolerance 1e-10")
    print(f"{'tolerance':>10s} {'grid':>14s} {'alpha':>8s} {'rel. rms force error':>21s}  what")
    for delta in [float(a) for a in args.accuracy.split(",")]:
        f, used = coulomb_forces(mm, unit, state, args.cutoff, mm.NonbondedForce.PME, delta)
        err = math.sqrt(((f - ref) ** 2).sum()) / norm
        print(f"{delta:10.2g} {'x'.join(map(str, used[1:])):>14s} {used[0]:8.5f} {err:21.3g}  OpenMM's own grid")
        alpha, grid = pairmd_pme_parameters(state[2], args.cutoff, delta)
        f, used = coulomb_forces(mm, unit, state, args.cutoff, mm.NonbondedForce.PME, delta, (alpha, *grid))
        err = math.sqrt(((f - ref) ** 2).sum()) / norm
        print(f"{delta:10.2g} {'x'.join(map(str, used[1:])):>14s} {used[0]:8.5f} {err:21.3g}  "
              f"pairmd's order-5 grid (openmm_pme.py's default)")
    if args.pairmd:
        import h5py

        with h5py.File(args.pairmd, "r") as h:
            f = h["particles/all/force/value"][0]
        err = math.sqrt(((f - ref) ** 2).sum()) / norm
        print(f"pairmd's forces ({args.pairmd}, its log has alpha, grid and order): {err:.3g}")


if __name__ == "__main__":
    sys.exit(main())
