#!/usr/bin/env python3
"""The semiflexible Kremer-Grest melt of configs/semiflexible_melt.yaml in OpenMM, timed as
`pairmd compare` times pairmd (issue #32: pairmd >= 1.5x OpenMM at 64,000 beads on the H100).

The same model: chains of 100 beads at bead density 0.85; FENE bonds K = 30, R0 = 1.5
(CustomBondForce); WCA between every pair of beads, bonded ones too (NonbondedForce,
CutoffPeriodic at 2^(1/6), no dispersion correction, no switching, charges 0: the forces of
pairmd's shifted WCA, whose energy differs by the shift); the bending potential
k (1 + cos theta), k = 1.5 on every three consecutive beads (CustomAngleForce, theta the
i-j-k angle: pairmd's `cosine` angle, LAMMPS's angle_style cosine); Langevin dynamics
(LangevinMiddleIntegrator) at kT = 1, friction 0.5, dt = 0.01. OpenMM works in amu, nm, kJ/mol
and ps: sigma = 1 nm, epsilon = 1 kJ/mol and mass 1 amu make the time unit 1 ps and
kT = 1 kJ/mol the temperature 1 / 0.0083144626 K.

The start: the beads on a simple cubic lattice of the melt's density (spacing 1.056 sigma at
0.85), joined in one path that snakes through it (neighbours on the path are lattice
neighbours: bonds of 1.056, no overlaps), cut into chains; the warm-up (default 5,000 steps,
50 tau) melts it. pairmd starts from its relaxed random walks (`pairmd compare`'s warm-up). The
chains' straight runs relax slowly: on the CPU platform at 2,000 beads <cos beta> falls from
0.74 after 10 tau to 0.57 after 40 and 0.48 after 120, towards the 0.46 that pairmd's melt
(configs/semiflexible_melt.yaml, 2,000 beads) holds from 40 tau on. The cost of a step depends on the density and the temperature (neighbours, list
rebuilds), which are the same in both, not on the bond angles.

Timing, as `pairmd compare --steps 200 --repeats 5`: after the warm-up, 5 repeats of 200 steps,
each ended by a state download (which waits for the GPU), median reported. The CSV has the
columns of bench/openmm_lj.py, so bench/openmm_ratio.py pairs it with `pairmd compare`'s CSV.

usage: openmm_semiflexible.py [--sizes 64000] [--length 100] [--precision mixed,single]
                              [--steps 200] [--repeats 5] [--warmup 5000] [--csv PATH]
                              [--angle cosine|harmonic|none] [--platform CUDA]
Needs the `openmm` and `openmm-cuda-13` wheels (scripts/device_run.sh semiflexible installs them
from .whl/, see docs/benchmarks.md); --platform CPU tries the script anywhere.
"""
import argparse
import csv
import math
import sys

from openmm_timing import steady_state_timing  # bench/, beside this script

DENSITY = 0.85
FENE_K, FENE_R0 = 30.0, 1.5
BEND_K = 1.5
KT = 1.0  # kJ/mol
DT, FRICTION = 0.01, 0.5


def snake_lattice(n):
    """n sites of a cubic lattice of density DENSITY, in an order whose neighbours are adjacent."""
    m = math.ceil(round(n ** (1.0 / 3.0), 9))
    edge = (n / DENSITY) ** (1.0 / 3.0)
    a = edge / m
    sites = []
    for z in range(m):
        ys = range(m) if z % 2 == 0 else range(m - 1, -1, -1)
        for yi, y in enumerate(ys):
            forward = (z * m + yi) % 2 == 0
            for x in (range(m) if forward else range(m - 1, -1, -1)):
                sites.append(((x + 0.5) * a, (y + 0.5) * a, (z + 0.5) * a))
                if len(sites) == n:
                    return sites, edge
    return sites, edge


def build(mm, unit, n, length, precision, platform_name, angle):
    if n % length:
        raise SystemExit(f"openmm_semiflexible: N = {n} is not a whole number of chains of {length}")
    pos, edge = snake_lattice(n)
    system = mm.System()
    system.setDefaultPeriodicBoxVectors(mm.Vec3(edge, 0, 0), mm.Vec3(0, edge, 0), mm.Vec3(0, 0, edge))
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(mm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(2.0 ** (1.0 / 6.0))
    nb.setUseDispersionCorrection(False)
    nb.setUseSwitchingFunction(False)
    fene = mm.CustomBondForce("-0.5*K*R0^2*log(1-(r/R0)^2)")
    fene.addGlobalParameter("K", FENE_K)
    fene.addGlobalParameter("R0", FENE_R0)
    fene.setUsesPeriodicBoundaryConditions(True)
    if angle == "cosine":
        bend = mm.CustomAngleForce("k_bend*(1+cos(theta))")
        bend.addGlobalParameter("k_bend", BEND_K)
    elif angle == "harmonic":  # the harmonic force OpenMM has built in, for its cost (not the same model)
        bend = mm.HarmonicAngleForce()
    else:
        bend = None
    if bend is not None:
        bend.setUsesPeriodicBoundaryConditions(True)
    for i in range(n):
        system.addParticle(1.0)
        nb.addParticle(0.0, 1.0, 1.0)
        if i % length:
            fene.addBond(i - 1, i, [])
        if i % length >= 2 and bend is not None:
            if angle == "harmonic":
                bend.addAngle(i - 2, i - 1, i, math.pi, BEND_K)
            else:
                bend.addAngle(i - 2, i - 1, i, [])
    for f in (nb, fene, bend):
        if f is not None:
            system.addForce(f)
    temperature = KT / 0.0083144626  # kelvin
    integrator = mm.LangevinMiddleIntegrator(temperature, FRICTION, DT)
    integrator.setRandomNumberSeed(2016)
    platform = mm.Platform.getPlatformByName(platform_name)
    props = {"Precision": precision} if platform_name in ("CUDA", "OpenCL") else {}
    context = mm.Context(system, integrator, platform, props)
    context.setPositions([mm.Vec3(*p) for p in pos] * unit.nanometer)
    context.setVelocitiesToTemperature(temperature, 2016)
    return context, integrator


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="64000")
    ap.add_argument("--length", type=int, default=100)
    ap.add_argument("--precision", default="mixed,single")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5000)
    ap.add_argument("--angle", default="cosine", choices=["cosine", "harmonic", "none"])
    ap.add_argument("--csv", default="")
    ap.add_argument("--platform", default="CUDA", help="CUDA (the benchmark); CPU or Reference to try the script")
    args = ap.parse_args()
    import openmm as mm
    from openmm import unit

    print(f"OpenMM {mm.__version__}, {args.platform} platform; semiflexible KG melt, chains of {args.length}, "
          f"rho {DENSITY}, FENE {FENE_K}/{FENE_R0}, WCA, angle {args.angle} k {BEND_K}, kT {KT}, dt {DT}; "
          f"{args.steps} steps x {args.repeats} repeats after {args.warmup} warm-up steps", flush=True)
    print(f"{'N':>9s} {'precision':>9s} {'ms/step':>9s} {'steps/s':>9s} {'spread':>7s}", flush=True)
    rows = []
    for n in [int(s) for s in args.sizes.split(",") if s]:
        for precision in [p for p in args.precision.split(",") if p]:
            context, integrator = build(mm, unit, n, args.length, precision, args.platform, args.angle)
            med, spread = steady_state_timing(context, integrator, args.warmup, args.steps, args.repeats)
            state = context.getState(getEnergy=True)
            e = state.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / n
            t = 2 * state.getKineticEnergy().value_in_unit(unit.kilojoule_per_mole) / (3 * n)
            if not (math.isfinite(e) and math.isfinite(t)):
                raise SystemExit(f"openmm_semiflexible: N = {n} {precision}: the energy is not finite")
            rows.append({"n": n, "precision": precision, "ms_per_step": 1e3 * med, "timesteps_per_s": 1.0 / med,
                         "repeat_spread": spread, "pe_per_particle": e})
            print(f"{n:9d} {precision:>9s} {1e3 * med:9.4f} {1.0 / med:9.0f} {100 * spread:6.1f}%  "
                  f"(PE/N {e:.3f}, kT {t:.3f})", flush=True)
            del context, integrator
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
