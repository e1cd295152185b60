#!/usr/bin/env python3
"""The PME polyelectrolyte of configs/polyelectrolyte_pme.yaml in OpenMM, timed as openmm_lj.py times.

The same system, read from a trajectory pairmd wrote of its start state (positions, types,
charges, bonds, box of frame 0):

    pairmd run configs/polyelectrolyte_pme.yaml --set system.chains.count=1422 --set steps=0 \\
        --set output.trajectory.every=1 --set output.prefix=pe64k      # 63,990 particles
    python3 bench/openmm_pme.py pe64k.h5

Forces: WCA between all beads (CustomNonbondedForce, 4 (r^-12 - r^-6) + 1 cut at 2^(1/6)),
FENE bonds (K = 30, R0 = 1.5; CustomBondForce), and Coulomb with l_B = 2 (C = l_B kT = 2)
by NonbondedForce.PME cut at 6 with no exceptions (pairmd's `exclusions: none`), Langevin
dynamics (LangevinMiddleIntegrator) at kT = 1, friction 1, dt = 0.005. Units as openmm_lj.py:
sigma = 1 nm, epsilon = 1 kJ/mol, mass 1 amu, so tau = 1 ps; charges are scaled by
sqrt(2 / 138.935456) so that OpenMM's k_e q_i q_j / r is 2 q_i q_j / r.

PME parameters: by default pairmd's own for the accuracy (alpha = sqrt(-ln(2 delta)) / rc, the
grid of potentials/pme.h, order 5, set with setPMEParameters), so both programs do the same
work at the same accuracy; --openmm-grid lets OpenMM choose from ewaldErrorTolerance = delta
instead (a coarser grid: ~1.5 delta measured, docs/electrostatics.md).

usage: openmm_pme.py STATE.h5 [STATE.h5 ...] [--accuracy 1e-5] [--cutoff 6] [--openmm-grid]
                     [--precision mixed,single] [--steps 200] [--repeats 5] [--warmup 550] [--csv PATH]
Needs h5py and the `openmm` and `openmm-cuda-13` wheels (scripts/device_run.sh openmm installs them).
"""
import argparse
import csv
import math
import statistics
import sys
import time

import h5py
import numpy as np

COULOMB = 138.935456  # OpenMM's k_e, kJ/mol nm / e^2


def fft_friendly(n):
    while True:
        r = n
        for f in (2, 3, 5, 7):
            while r % f == 0:
                r //= f
        if r == 1:
            return n
        n += 1


def pairmd_pme_parameters(edges, cutoff, accuracy, order=5):
    """potentials/pme.cpp: alpha and the grid pairmd chooses for this accuracy and order."""
    alpha = math.sqrt(-math.log(2 * accuracy)) / cutoff
    c, e = (1.0, 1.0 / 3.0) if order <= 4 else (0.9, 1.0 / order)
    grid = [fft_friendly(max(int(math.ceil(c * alpha * L / accuracy ** e)), 2 * order)) for L in edges]
    return alpha, grid


def load_state(path):
    with h5py.File(path, "r") as h:
        a = h["particles/all"]
        return (a["position/value"][0], a["charge"][:], a["box/edges/value"][0], h["connectivity/bonds"][:])


def build(mm, unit, state, args, precision):
    pos, charge, edges, bonds = state
    system = mm.System()
    system.setDefaultPeriodicBoxVectors(mm.Vec3(edges[0], 0, 0), mm.Vec3(0, edges[1], 0), mm.Vec3(0, 0, edges[2]))
    scale = math.sqrt(2.0 / COULOMB)
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(mm.NonbondedForce.PME)
    nb.setCutoffDistance(args.cutoff)
    nb.setUseDispersionCorrection(False)
    nb.setEwaldErrorTolerance(args.accuracy)
    if not args.openmm_grid:
        alpha, grid = pairmd_pme_parameters(edges, args.cutoff, args.accuracy)
        nb.setPMEParameters(alpha, *grid)
    wca = mm.CustomNonbondedForce("4*(r^-12 - r^-6) + 1")
    wca.setNonbondedMethod(mm.CustomNonbondedForce.CutoffPeriodic)
    wca.setCutoffDistance(2 ** (1 / 6))
    fene = mm.CustomBondForce("-0.5*30*1.5^2*log(1 - (r/1.5)^2)")
    fene.setUsesPeriodicBoundaryConditions(True)
    for q in charge:
        system.addParticle(1.0)
        nb.addParticle(float(q) * scale, 1.0, 0.0)
        wca.addParticle([])
    for i, j in bonds:
        fene.addBond(int(i), int(j), [])
    for f in (nb, wca, fene):
        system.addForce(f)
    temperature = 1.0 / 0.0083144626  # kT = 1 kJ/mol
    integrator = mm.LangevinMiddleIntegrator(temperature, 1.0, 0.005)
    integrator.setRandomNumberSeed(2026)
    platform = mm.Platform.getPlatformByName(args.platform)
    props = {"Precision": precision} if args.platform in ("CUDA", "OpenCL") else {}
    context = mm.Context(system, integrator, platform, props)
    context.setPositions([mm.Vec3(*p) for p in pos] * unit.nanometer)
    context.setVelocitiesToTemperature(temperature, 2026)
    return context, integrator, nb.getPMEParametersInContext(context)


def time_steps(context, integrator, steps):
    t0 = time.perf_counter()
    integrator.step(steps)
    context.getState(getPositions=True)  # waits for the GPU
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("states", nargs="+")
    ap.add_argument("--accuracy", type=float, default=1e-5)
    ap.add_argument("--cutoff", type=float, default=6.0)
    ap.add_argument("--openmm-grid", action="store_true")
    ap.add_argument("--precision", default="mixed,single")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=550)
    ap.add_argument("--csv", default="")
    ap.add_argument("--platform", default="CUDA", help="CUDA (the benchmark); CPU or Reference to try the script")
    args = ap.parse_args()
    import openmm as mm
    from openmm import unit

    print(f"OpenMM {mm.__version__}, {args.platform} platform; PME polyelectrolyte, accuracy {args.accuracy}, "
          f"rc {args.cutoff}, dt 0.005; {args.steps} steps x {args.repeats} repeats after {args.warmup} warm-up steps",
          flush=True)
    rows = []
    for path in args.states:
        state = load_state(path)
        n = len(state[1])
        for precision in [p for p in args.precision.split(",") if p]:
            context, integrator, pme = build(mm, unit, state, args, precision)
            integrator.step(args.warmup)
            times = [time_steps(context, integrator, args.steps) for _ in range(args.repeats)]
            med = statistics.median(times) / args.steps
            spread = (max(times) - min(times)) / statistics.median(times)
            e = context.getState(getEnergy=True).getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / n
            if not math.isfinite(e):
                raise SystemExit(f"openmm_pme: {path} {precision}: the potential energy is not finite")
            alpha, nx, ny, nz = pme
            rows.append({"n": n, "precision": precision, "alpha": alpha, "grid": f"{nx}x{ny}x{nz}",
                         "ms_per_step": 1e3 * med, "timesteps_per_s": 1.0 / med, "repeat_spread": spread,
                         "pe_per_particle": e})
            print(f"{n:9d} {precision:>9s} alpha {alpha:.5f} grid {nx}x{ny}x{nz}: {1e3 * med:9.4f} ms/step "
                  f"{1.0 / med:9.0f} steps/s spread {100 * spread:5.1f}%  (PE/N {e:.4f})", flush=True)
            del context, integrator
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
