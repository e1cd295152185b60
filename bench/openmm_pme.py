#!/usr/bin/env python3
"""The periodic polyelectrolyte of configs/polyelectrolyte_pme.yaml in OpenMM with PME, timed as
`pairmd compare` times pairmd (issue #35: pairmd >= 1.5x OpenMM at 64k and 256k particles on the H100).

The same model: chains of 30 beads, every second bead charged -1, one counterion +1 per charge
(45 particles per chain, neutral), bead and counterion density 0.1 in a cubic periodic box; FENE
bonds K = 30, R0 = 1.5 (CustomBondForce); WCA between every pair of particles, bonded ones too
(CustomNonbondedForce, 4 (r^-12 - r^-6) + 1 cut at 2^(1/6)); Coulomb with Bjerrum length 2
(k_e / eps_r = l_B kT = 2) by NonbondedForce.PME cut at 6, no exceptions (pairmd's
`exclusions: none`), no dispersion correction; Langevin dynamics (LangevinMiddleIntegrator) at
kT = 1, friction 1, dt = 0.005. OpenMM works in amu, nm, kJ/mol and ps: sigma = 1 nm,
epsilon = 1 kJ/mol and mass 1 amu make the time unit 1 ps; the charges are scaled by
sqrt(2 / 138.935456) so that OpenMM's k_e q_i q_j / r is 2 q_i q_j / r.

N is rounded down to whole chains: --sizes 64000,256000 gives 63,990 and 255,960 particles, as
`pairmd compare configs/polyelectrolyte_pme.yaml --sizes 64000,256000` does. The start: the
chains grown as random walks of steps 0.97 and the counterions placed at random, no two
particles closer than 0.9; a few minimiser steps and the warm-up (default 1,000 steps) relax it.
Or, given STATE.h5 files instead, the frame 0 of a trajectory pairmd wrote (positions, charges,
bonds, box).

PME parameters: by default alpha = sqrt(-ln(2 delta)) / rc (pairmd's and OpenMM's) and the grid
pairmd's formula gives at B-spline order 5 (potentials/pme.h; OpenMM's PME is order 5), set with
setPMEParameters: a grid fine enough for random ions; --openmm-grid lets OpenMM choose its own
grid from ewaldErrorTolerance = delta instead, as its users run it (docs/benchmarks.md compares
with it: on this system its Coulomb force error, 3.86e-6 at delta 1e-5, equals pairmd's at a
grid spacing of 0.4, measured by bench/openmm_pme_accuracy.py; on random ions a grid of its
spacing reaches ~1.9 delta). pairmd itself runs order 6 (its default).

Timing, as `pairmd compare --steps 200 --repeats 5`: after the warm-up, 5 repeats of 200 steps,
each ended by a state download (which waits for the GPU), median reported. The CSV has the
columns of bench/openmm_lj.py (and alpha, grid), so bench/openmm_ratio.py pairs it with
`pairmd compare`'s CSV.

usage: openmm_pme.py [--sizes 64000,256000] [--steps 200] [--repeats 5] [--warmup 1000]
                     [--accuracy 1e-5] [--cutoff 6] [--openmm-grid] [--precision mixed,single]
                     [--csv PATH] [--platform CUDA] [STATE.h5 ...]
Needs NumPy and the `openmm` and `openmm-cuda-13` wheels (scripts/device_run.sh pme installs them
from .whl/, docs/benchmarks.md); h5py for STATE.h5 files; --platform CPU tries the script anywhere.
"""
import argparse
import csv
import math
import sys

import numpy as np

from openmm_timing import steady_state_timing  # bench/, beside this script

COULOMB = 138.935456  # OpenMM's k_e, kJ/mol nm / e^2
DENSITY = 0.1
LENGTH, CHARGED_EVERY = 30, 2
PER_CHAIN = LENGTH + LENGTH // CHARGED_EVERY  # beads and their counterions
BOND, MIN_DISTANCE = 0.97, 0.9
KT = 1.0  # kJ/mol
DT, FRICTION = 0.005, 1.0


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


class Placer:
    """Particles in a periodic cube, no two closer than MIN_DISTANCE (a cell grid of that edge)."""

    def __init__(self, edge, rng):
        self.edge, self.rng = edge, rng
        self.m = max(3, int(edge / MIN_DISTANCE))
        self.cell = edge / self.m
        self.cells = {}
        self.pos = []

    def key(self, x):
        return tuple(int(v / self.cell) % self.m for v in x)

    def free(self, x, skip=-1):
        k = self.key(x)
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in (-1, 0, 1):
                    for j in self.cells.get(((k[0] + dx) % self.m, (k[1] + dy) % self.m, (k[2] + dz) % self.m), ()):
                        if j == skip:
                            continue
                        d = x - self.pos[j]
                        d -= self.edge * np.round(d / self.edge)
                        if d @ d < MIN_DISTANCE * MIN_DISTANCE:
                            return False
        return True

    def add(self, x):
        self.cells.setdefault(self.key(x), []).append(len(self.pos))
        self.pos.append(x)

    def remove_last(self, count):
        for _ in range(count):
            x = self.pos.pop()
            self.cells[self.key(x)].remove(len(self.pos))

    def random_point(self):
        return self.rng.uniform(0.0, self.edge, 3)

    def chain(self):
        """One random walk of LENGTH beads, started again where it gets stuck."""
        while True:
            start = len(self.pos)
            x = self.random_point()
            while not self.free(x):
                x = self.random_point()
            self.add(x)
            while len(self.pos) - start < LENGTH:
                for _ in range(50):
                    v = self.rng.normal(size=3)
                    y = (self.pos[-1] + BOND * v / np.linalg.norm(v)) % self.edge
                    if self.free(y, skip=len(self.pos) - 1):
                        self.add(y)
                        break
                else:
                    break
            if len(self.pos) - start == LENGTH:
                return
            self.remove_last(len(self.pos) - start)


def build_start(n_wanted, seed=2026):
    """Positions, charges, bonds and box edges of floor(n / 45) chains with their counterions."""
    chains = max(1, n_wanted // PER_CHAIN)
    n = chains * PER_CHAIN
    edge = (n / DENSITY) ** (1.0 / 3.0)
    p = Placer(edge, np.random.default_rng(seed))
    charge, bonds = [], []
    for c in range(chains):
        p.chain()
        first = c * LENGTH
        bonds += [(first + k, first + k + 1) for k in range(LENGTH - 1)]
        charge += [-1.0 if k % CHARGED_EVERY == 0 else 0.0 for k in range(LENGTH)]
    for _ in range(chains * (LENGTH // CHARGED_EVERY)):
        x = p.random_point()
        while not p.free(x):
            x = p.random_point()
        p.add(x)
        charge.append(1.0)
    return np.array(p.pos), np.array(charge), np.array([edge] * 3), np.array(bonds)


def load_state(path):
    import h5py

    with h5py.File(path, "r") as h:
        a = h["particles/all"]
        return (a["position/value"][0], a["charge"][:], a["box/edges/value"][0], h["connectivity/bonds"][:])


def make_system(mm, state, args):
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
    # Its own force group: OpenMM's CUDA platform wants one cutoff per group, and PME's is rc.
    wca.setForceGroup(1)
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
    return system, nb


def build(mm, unit, state, args, precision):
    system, nb = make_system(mm, state, args)
    temperature = KT / 0.0083144626  # kT = 1 kJ/mol
    integrator = mm.LangevinMiddleIntegrator(temperature, FRICTION, DT)
    integrator.setRandomNumberSeed(2026)
    platform = mm.Platform.getPlatformByName(args.platform)
    props = {"Precision": precision} if args.platform in ("CUDA", "OpenCL") else {}
    context = mm.Context(system, integrator, platform, props)
    context.setPositions([mm.Vec3(*p) for p in state[0]] * unit.nanometer)
    mm.LocalEnergyMinimizer.minimize(context, 10.0, 100)
    context.setVelocitiesToTemperature(temperature, 2026)
    return context, integrator, nb.getPMEParametersInContext(context)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("states", nargs="*", help="pairmd trajectories (H5MD) to start from instead of --sizes")
    ap.add_argument("--sizes", default="64000,256000")
    ap.add_argument("--accuracy", type=float, default=1e-5)
    ap.add_argument("--cutoff", type=float, default=6.0)
    ap.add_argument("--openmm-grid", action="store_true")
    ap.add_argument("--precision", default="mixed,single")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--csv", default="")
    ap.add_argument("--platform", default="CUDA", help="CUDA (the benchmark); CPU or Reference to try the script")
    return ap.parse_args()


def main():
    args = parse_args()
    import openmm as mm
    from openmm import unit

    print(f"OpenMM {mm.__version__}, {args.platform} platform; PME polyelectrolyte, accuracy {args.accuracy}, "
          f"rc {args.cutoff}, dt {DT}; {args.steps} steps x {args.repeats} repeats after {args.warmup} warm-up steps",
          flush=True)
    starts = [(p, load_state) for p in args.states] or [(int(s), build_start) for s in args.sizes.split(",") if s]
    rows = []
    for what, make in starts:
        state = make(what)
        n = len(state[1])
        for precision in [p for p in args.precision.split(",") if p]:
            context, integrator, pme = build(mm, unit, state, args, precision)
            med, spread = steady_state_timing(context, integrator, args.warmup, args.steps, args.repeats)
            e = context.getState(getEnergy=True).getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / n
            if not math.isfinite(e):
                raise SystemExit(f"openmm_pme: N = {n} {precision}: the potential energy is not finite")
            alpha, nx, ny, nz = pme
            rows.append({"n": n, "precision": precision, "ms_per_step": 1e3 * med, "timesteps_per_s": 1.0 / med,
                         "repeat_spread": spread, "pe_per_particle": e, "alpha": alpha, "grid": f"{nx}x{ny}x{nz}"})
            print(f"{n:9d} {precision:>9s} alpha {alpha:.5f} grid {nx}x{ny}x{nz}: {1e3 * med:9.4f} ms/step "
                  f"{1.0 / med:9.0f} steps/s spread {100 * spread:5.1f}%  (PE/N {e:.4f})", flush=True)
            del context, integrator
    if args.csv and rows:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
