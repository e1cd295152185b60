#!/usr/bin/env python3
"""The LJ liquid of configs/lj_liquid.yaml in OpenMM, timed as `pairmd compare` times pairmd.

The same system: an fcc lattice of n^3 cells at density 0.8442 (N = 4 n^3), LJ with sigma = 1,
epsilon = 1, mass 1, cut (not shifted) at 2.5 with no dispersion correction
(NonbondedForce, CutoffPeriodic, charges 0), Langevin dynamics (LangevinMiddleIntegrator) at
kT = 1.2 with friction 1 and dt = 0.005. OpenMM works in amu, nm, kJ/mol and ps, so reading
sigma as 1 nm, epsilon as 1 kJ/mol and the mass as 1 amu makes the time unit 1 ps and
kT = 1.2 kJ/mol the temperature 1.2 / 0.0083144626 K. OpenMM picks its own neighbour-list
padding; pairmd uses skin 0.4 (configs/lj_liquid.yaml).

Timing, as `pairmd compare --steps 200 --repeats 5 --warmup 500`: 550 warm-up steps (the lattice
melts and every kernel is compiled and launched once), then 5 repeats of 200 steps, each ended
by a state download (which waits for the GPU), median reported.

usage: openmm_lj.py [--sizes 4000,32000,...] [--precision mixed,single] [--steps 200]
                    [--repeats 5] [--warmup 550] [--csv PATH]
Needs the `openmm` and `openmm-cuda-13` wheels (scripts/device_run.sh openmm installs them from
.whl/, see docs/benchmarks.md).
"""
import argparse
import csv
import math
import sys

from openmm_timing import steady_state_timing  # bench/, beside this script


def fcc_positions(cells, density):
    a = (4.0 / density) ** (1.0 / 3.0)
    basis = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    pos = []
    for z in range(cells):
        for y in range(cells):
            for x in range(cells):
                for b in basis:
                    pos.append(((x + b[0]) * a, (y + b[1]) * a, (z + b[2]) * a))
    return pos, cells * a


def build(mm, unit, n, precision, platform_name):
    cells = round((n / 4) ** (1.0 / 3.0))
    if 4 * cells ** 3 != n:
        raise SystemExit(f"openmm_lj: N = {n} is not 4 n^3 (an fcc lattice of n^3 cells)")
    pos, edge = fcc_positions(cells, 0.8442)
    system = mm.System()
    system.setDefaultPeriodicBoxVectors(mm.Vec3(edge, 0, 0), mm.Vec3(0, edge, 0), mm.Vec3(0, 0, edge))
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(mm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(2.5)
    nb.setUseDispersionCorrection(False)
    nb.setUseSwitchingFunction(False)
    for _ in pos:
        system.addParticle(1.0)
        nb.addParticle(0.0, 1.0, 1.0)
    system.addForce(nb)
    kT = 1.2  # kJ/mol
    temperature = kT / 0.0083144626  # kelvin
    integrator = mm.LangevinMiddleIntegrator(temperature, 1.0, 0.005)
    integrator.setRandomNumberSeed(2026)
    platform = mm.Platform.getPlatformByName(platform_name)
    props = {"Precision": precision} if platform_name in ("CUDA", "OpenCL") else {}
    context = mm.Context(system, integrator, platform, props)
    context.setPositions([mm.Vec3(*p) for p in pos] * unit.nanometer)
    context.setVelocitiesToTemperature(temperature, 2026)
    return context, integrator


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4000,32000,62500,256000,1000188")
    ap.add_argument("--precision", default="mixed,single")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=550)
    ap.add_argument("--csv", default="")
    ap.add_argument("--platform", default="CUDA", help="CUDA (the benchmark); CPU or Reference to try the script")
    args = ap.parse_args()
    import openmm as mm
    from openmm import unit

    print(f"OpenMM {mm.__version__}, {args.platform} platform; LJ liquid rho 0.8442, rc 2.5, kT 1.2, dt 0.005; "
          f"{args.steps} steps x {args.repeats} repeats after {args.warmup} warm-up steps", flush=True)
    print(f"{'N':>9s} {'precision':>9s} {'ms/step':>9s} {'steps/s':>9s} {'spread':>7s}", flush=True)
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s]:
        for precision in [p for p in args.precision.split(",") if p]:
            context, integrator = build(mm, unit, n, precision, args.platform)
            med, spread = steady_state_timing(context, integrator, args.warmup, args.steps, args.repeats)
            e = context.getState(getEnergy=True).getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / n
            if not math.isfinite(e):
                raise SystemExit(f"openmm_lj: N = {n} {precision}: the potential energy is not finite")
            rows.append({"n": n, "precision": precision, "ms_per_step": 1e3 * med, "timesteps_per_s": 1.0 / med,
                         "repeat_spread": spread, "pe_per_particle": e})
            print(f"{n:9d} {precision:>9s} {1e3 * med:9.4f} {1.0 / med:9.0f} {100 * spread:6.1f}%  (PE/N {e:.3f})",
                  flush=True)
            del context, integrator
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
