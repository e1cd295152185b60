#!/usr/bin/env python3
"""pairmd's particle-mesh Ewald next to LAMMPS's Ewald and PPPM (Debian's `lmp`, KSPACE package).

Two comparisons, on the CPU backend, written to OUTDIR (docs/electrostatics.md cites the result):

1. `run 0`: 1000 random unit ions (+-1, neutral, at least 0.9 apart) in a periodic box of edge
   20 (LJ units, C = 1), coul/long cut at 6. LAMMPS: kspace_style ewald 1e-10; pairmd:
   coulomb_long and electrostatics.accuracy 1e-8. The energies and the relative rms difference
   of the forces (LAMMPS's coul/long evaluates erfc by the Abramowitz-Stegun polynomial 7.1.26,
   good to ~1e-7: the forces cannot agree closer than that).
2. NVE energy drift on the example configs/polyelectrolyte_pme.yaml (its start state after
   relaxation, with the same velocities, exported as a LAMMPS data file): pairmd with PME at
   1e-5 and LAMMPS with PPPM at 1e-5 (same real-space cutoff 6, WCA, FENE, l_B = 2 as
   dielectric 0.5), velocity Verlet at dt = 0.005 for STEPS steps. Both jump by the same ~2.5e-3
   per particle in the first 0.5 tau (the relaxed start's transient); from there on, the drift
   is the slope of a least-squares line through E_total(t), per particle and per tau, and the
   largest |E - E(0.5)| per particle. LAMMPS's PPPM accuracy is relative to the force between
   two unit charges 1 sigma apart, pairmd's the relative rms force error: comparable, not equal.

usage: lammps_pme.py PAIRMD OUTDIR [--steps 20000]
"""
import argparse
import csv
import math
import os
import random
import re
import subprocess
import sys

import h5py
import numpy as np


def run(cmd, cwd, log):
    with open(os.path.join(cwd, log), "w") as f:
        r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.exit(f"lammps_pme: {' '.join(cmd)} failed (exit {r.returncode}); see {os.path.join(cwd, log)}")


def random_ions(n, L, seed=1):
    rng = random.Random(seed)
    pos = []
    while len(pos) < n:
        x = [rng.uniform(0, L) for _ in range(3)]
        ok = True
        for y in pos:
            d = [(a - b) - L * round((a - b) / L) for a, b in zip(x, y)]
            if d[0] ** 2 + d[1] ** 2 + d[2] ** 2 < 0.81:
                ok = False
                break
        if ok:
            pos.append(x)
    return np.array(pos), np.array([1.0 if i % 2 == 0 else -1.0 for i in range(n)])


def write_charge_data(path, pos, q, L):
    with open(path, "w") as f:
        f.write(f"random ions\n\n{len(q)} atoms\n1 atom types\n\n0 {L} xlo xhi\n0 {L} ylo yhi\n0 {L} zlo zhi\n\n")
        f.write("Masses\n\n1 1.0\n\nAtoms # charge\n\n")
        for i, (x, c) in enumerate(zip(pos, q)):
            f.write(f"{i + 1} 1 {c:.1f} {x[0]:.12f} {x[1]:.12f} {x[2]:.12f}\n")


def lammps_forces(out, L):
    data = os.path.join(out, "ions.data")
    with open(os.path.join(out, "ewald.in"), "w") as f:
        f.write(f"""units lj
atom_style charge
read_data ions.data
pair_style coul/long 6.0
pair_coeff * *
kspace_style ewald 1e-10
thermo_style custom step pe ecoul elong
thermo_modify norm no format float %.12g
dump d all custom 1 ewald.forces id fx fy fz
dump_modify d sort id format float %.12g
run 0
""")
    run(["lmp", "-in", "ewald.in", "-log", "ewald.log", "-screen", "none"], out, "ewald.out")
    text = open(os.path.join(out, "ewald.log")).read()
    m = re.search(r"Step\s+PotEng\s+E_coul\s+E_long\s*\n\s*0\s+(\S+)\s+(\S+)\s+(\S+)", text)
    pe = float(m.group(1))
    lines = open(os.path.join(out, "ewald.forces")).read().split("ITEM: ATOMS id fx fy fz\n")[1].split("\n")
    f = np.array([[float(v) for v in l.split()[1:]] for l in lines if l.strip()])
    return pe, f


def pairmd_forces(pairmd, out, accuracy):
    cfg = os.path.join(out, "ions.yaml")
    with open(cfg, "w") as f:
        f.write(f"""units: lj
system:
  types: [{{name: A, mass: 1.0, charge: 1.0}}]
  file: {{path: ions.data, atom_style: charge}}
  velocities: {{temperature: 0}}
force_field:
  exclusions: none
  pair: [{{potential: coulomb_long, cutoff: 6.0}}]
electrostatics: {{method: pme, accuracy: {accuracy}, order: 6}}
integrator: {{kind: nve, dt: 0.001}}
backend: cpu
steps: 0
output: {{trajectory: {{every: 1, forces_every: 1}}, thermo_every: 1}}
""")
    run([pairmd, "run", "ions.yaml", "--overwrite"], out, "pairmd_ions.out")
    with h5py.File(os.path.join(out, "ions.h5"), "r") as h:
        f = h["particles/all/force/value"][0]
        pe = h["observables/potential_energy/value"][0]
    return pe, f


def example_state(pairmd, out):
    """The example's start state (after relaxation) with its velocities, as pairmd writes it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run([pairmd, "run", os.path.join(root, "configs/polyelectrolyte_pme.yaml"), "--set", "steps=0", "--set",
         "output.prefix=" + os.path.join(out, "example0"), "--set", "output.trajectory.every=1", "--set",
         "output.trajectory.velocities_every=1", "--overwrite"], out, "pairmd_example0.out")
    with h5py.File(os.path.join(out, "example0.h5"), "r") as h:
        a = h["particles/all"]
        return (a["position/value"][0], a["velocity/value"][0], a["image/value"][0], a["species"][:], a["charge"][:],
                a["box/edges/value"][0], a["box/offset"][:], h["connectivity/bonds"][:])


def write_full_data(path, st):
    x, v, img, species, q, L, lo, bonds = st
    n = len(q)
    with open(path, "w") as f:
        f.write(f"polyelectrolyte_pme start\n\n{n} atoms\n{len(bonds)} bonds\n2 atom types\n1 bond types\n\n")
        for d, name in enumerate("xyz"):
            f.write(f"{lo[d]:.12f} {lo[d] + L[d]:.12f} {name}lo {name}hi\n")
        f.write("\nMasses\n\n1 1.0\n2 1.0\n\nAtoms # full\n\n")
        for i in range(n):
            f.write(f"{i + 1} 1 {species[i] + 1} {q[i]:.1f} {x[i][0]:.12f} {x[i][1]:.12f} {x[i][2]:.12f} "
                    f"{img[i][0]} {img[i][1]} {img[i][2]}\n")
        f.write("\nVelocities\n\n")
        for i in range(n):
            f.write(f"{i + 1} {v[i][0]:.12f} {v[i][1]:.12f} {v[i][2]:.12f}\n")
        f.write("\nBonds\n\n")
        for k, (i, j) in enumerate(bonds):
            f.write(f"{k + 1} 1 {i + 1} {j + 1}\n")


def drift(t, e, n, skip=0.5):
    """From t = skip on (both programs start with the same jump, the relaxed start's transient):
    the least-squares slope of E_total per particle per tau, the largest |E - E(skip)| per
    particle; and the jump before, per particle."""
    m = t >= skip - 1e-9
    slope = np.polyfit(t[m], e[m], 1)[0]
    return slope / n, float(np.max(np.abs(e[m] - e[m][0]))) / n, float(e[m][0] - e[0]) / n


def lammps_nve(out, steps):
    with open(os.path.join(out, "pppm.in"), "w") as f:
        f.write(f"""units lj
atom_style full
read_data example.data
bond_style fene
bond_coeff 1 30.0 1.5 0.0 1.0
special_bonds lj/coul 1.0 1.0 1.0
pair_style lj/cut/coul/long 1.122462048309373 6.0
pair_modify shift yes
pair_coeff * * 1.0 1.0
dielectric 0.5
kspace_style pppm 1e-5
neighbor 0.4 bin
neigh_modify every 1 delay 0 check yes
fix 1 all nve
timestep 0.005
thermo 50
thermo_style custom step time pe ke etotal
thermo_modify norm no format float %.12g
run {steps}
""")
    run(["lmp", "-in", "pppm.in", "-log", "pppm.log", "-screen", "none"], out, "pppm.out")
    rows = []
    for line in open(os.path.join(out, "pppm.log")):
        p = line.split()
        if len(p) == 5 and p[0].isdigit():
            rows.append([float(v) for v in p])
    rows = np.array(rows)
    return rows[:, 1], rows[:, 4]


def pairmd_nve(pairmd, out, steps):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    prefix = os.path.join(out, "example_nve")
    run([pairmd, "run", os.path.join(root, "configs/polyelectrolyte_pme.yaml"), "--backend", "cpu", "--set",
         "integrator.kind=nve", "--set", f"steps={steps}", "--set", "output.thermo_every=50", "--set",
         "output.prefix=" + prefix, "--set", "output.trajectory.every=0", "--overwrite"], out, "pairmd_nve.out")
    rows = list(csv.DictReader(open(prefix + ".thermo.csv")))
    t = np.array([float(r["time[tau]"]) for r in rows])
    e = np.array([float(r["total_energy[epsilon]"]) for r in rows])
    return t, e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pairmd")
    ap.add_argument("outdir")
    ap.add_argument("--steps", type=int, default=20000)
    a = ap.parse_args()
    out = os.path.abspath(a.outdir)
    os.makedirs(out, exist_ok=True)
    L = 20.0
    pos, q = random_ions(1000, L)
    write_charge_data(os.path.join(out, "ions.data"), pos, q, L)
    e_lmp, f_lmp = lammps_forces(out, L)
    e_pmd, f_pmd = pairmd_forces(os.path.abspath(a.pairmd), out, 1e-8)
    rel = math.sqrt(np.sum((f_pmd - f_lmp) ** 2) / np.sum(f_lmp ** 2))
    print(f"run 0, 1000 ions: LAMMPS ewald 1e-10 E = {e_lmp:.10f}, pairmd PME 1e-8 E = {e_pmd:.10f} "
          f"(relative difference {abs(e_pmd - e_lmp) / abs(e_lmp):.2g}); relative rms force difference {rel:.2g}")
    st = example_state(os.path.abspath(a.pairmd), out)
    write_full_data(os.path.join(out, "example.data"), st)
    n = len(st[4])
    for name, (t, e) in (("LAMMPS pppm 1e-5", lammps_nve(out, a.steps)),
                         ("pairmd pme 1e-5 (order 6)", pairmd_nve(os.path.abspath(a.pairmd), out, a.steps))):
        slope, worst, jump = drift(t, e, n)
        print(f"NVE, {n} particles, dt 0.005, {a.steps} steps, {name}: jump in the first 0.5 tau {jump:.3g} "
              f"per particle; from 0.5 tau on drift {slope:.3g} per particle per tau, largest |E - E(0.5)| "
              f"{worst:.3g} per particle")


if __name__ == "__main__":
    main()
