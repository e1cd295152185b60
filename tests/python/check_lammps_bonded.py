#!/usr/bin/python3
"""pairmd's angle, dihedral and improper terms and special-bond scaling against LAMMPS (issue #32).

Two copies of a branched molecule (10 atoms each, atom style full, real units) with every angle
style LAMMPS and pairmd share (harmonic, cosine, cosine/squared), every dihedral style Debian's
LAMMPS has (harmonic, opls, multi/harmonic, and charmm with weight 0, which pairmd reads as a
one-term fourier dihedral), harmonic impropers, LJ and Coulomb pairs with 1-4 pairs scaled
(special_bonds lj 0 0 0.5 coul 0 0 0.8333), and harmonic bonds. One data file; LAMMPS evaluates
it with `run 0`, pairmd reads the same file (its Angle, Dihedral and Improper Coeffs with
`force_field.angles: file` and the like) and runs 0 steps. Checked: the energy of each term
(evdwl, ecoul, ebond, eangle, edihed, eimp), the total, the pressure (the virial: velocities are
zero) and every force component, to round-off (1e-9 relative to the largest force).

A second case gives pairmd `fourier` dihedrals of several cosines each (Dihedral Coeffs # fourier:
"m K1 n1 d1 ..."), which Debian's LAMMPS does not have: its data file lists each dihedral once per
cosine as a charmm dihedral of weight 0, whose sum is the same energy.

With --save DIR it also writes what the C++ tests compare against without LAMMPS
(tests/data/lammps_bonded: `Bonded.LammpsRunZeroReference` on the CPU,
`GpuBackend.BondedTermsMatchLammpsRunZero` on every GPU strategy): each case's data file as pairmd
reads it (data.CASE), its config with @DATA@ for the data file's path (CASE.yaml), and LAMMPS's
thermo and forces (CASE.lammps: "NAME VALUE" lines, then "force ID FX FY FZ").

usage: check_lammps_bonded.py PAIRMD SCRATCH [LMP] [--save DIR]   (exit 77: no `lmp`, Debian's lammps)
"""
import csv
import math
import os
import random
import shutil
import subprocess
import sys

import h5py
import numpy as np


def skip(why):
    print("SKIPPED:", why)
    sys.exit(77)


# The molecule: a chain 1-2-...-8 with branches 9 (on 3) and 10 (on 6).
BONDS = [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8), (3, 9), (6, 10)]
IMPROPERS = [(3, 2, 4, 9), (6, 5, 7, 10)]
ANGLE_COEFFS = ["harmonic 52.0 109.0", "cosine 3.1", "cosine/squared 41.0 117.0"]
DIHEDRAL_COEFFS = ["harmonic 1.3 -1 2", "opls 1.1 -0.4 0.7 0.25", "multi/harmonic 0.5 -0.3 0.8 0.2 -0.15",
                   "charmm 0.9 3 60 0.0"]
# config-side fourier types and the charmm dihedrals that sum to them
FOURIER = [[(0.7, 1, 0.0), (0.45, 3, 180.0)], [(1.2, 2, 30.0), (0.3, 1, -45.0), (0.2, 4, 90.0)]]


def neighbours():
    nb = {}
    for a, b in BONDS:
        nb.setdefault(a, []).append(b)
        nb.setdefault(b, []).append(a)
    return nb


def angles():
    nb = neighbours()
    out = []
    for j in sorted(nb):
        for x in range(len(nb[j])):
            for y in range(x + 1, len(nb[j])):
                out.append((nb[j][x], j, nb[j][y]))
    return out


def dihedrals():
    nb = neighbours()
    out = []
    for j, k in BONDS:
        for i in nb[j]:
            if i == k:
                continue
            for l in nb[k]:
                if l != j and l != i:
                    out.append((i, j, k, l))
    return out


def positions(rng):
    """Random-walk bonds of 1.5 A with angles of 100-125 deg, away from straight and folded."""
    x = {1: np.zeros(3)}
    parent = {b: a for a, b in BONDS}
    for atom in range(2, 11):
        p = parent[atom]
        for _ in range(1000):
            d = np.array([rng.gauss(0, 1) for _ in range(3)])
            d *= 1.5 / np.linalg.norm(d)
            cand = x[p] + d
            ok = all(np.linalg.norm(cand - x[q]) > 2.2 for q in x if q != p)
            pp = parent.get(p)
            if pp is not None:
                u, v = x[pp] - x[p], cand - x[p]
                ang = math.degrees(math.acos(np.dot(u, v) / np.linalg.norm(u) / np.linalg.norm(v)))
                ok = ok and 100 < ang < 125
            if ok:
                x[atom] = cand
                break
    return [x[a] for a in range(1, 11)]


def write_data(path, coords, mode):
    """Two molecules. Dihedrals: mode "styles", the four styles of DIHEDRAL_COEFFS (hybrid);
    "fourier", the types of FOURIER with all their terms on one line (pairmd); "charmm", one
    charmm type per term of FOURIER, each dihedral listed once per term (LAMMPS's sum)."""
    n = 10
    mol_angles, mol_dihedrals = angles(), dihedrals()
    if mode == "charmm":
        coeffs = [f"{k} {n_} {int(d)} 0.0" for terms in FOURIER for (k, n_, d) in terms]
        first = [sum(len(t) for t in FOURIER[:q]) for q in range(len(FOURIER))]
        dih_lines = []
        for q, d in enumerate(mol_dihedrals):
            f = q % len(FOURIER)
            for t in range(len(FOURIER[f])):
                dih_lines.append((first[f] + t + 1, d))
    elif mode == "fourier":
        coeffs = [f"{len(t)} " + " ".join(f"{k} {n_} {d}" for (k, n_, d) in t) for t in FOURIER]
        dih_lines = [(q % len(FOURIER) + 1, d) for q, d in enumerate(mol_dihedrals)]
    else:
        coeffs = DIHEDRAL_COEFFS
        dih_lines = [(q % len(coeffs) + 1, d) for q, d in enumerate(mol_dihedrals)]
    lines = ["pairmd bonded test", "", f"{2 * n} atoms", f"{2 * len(BONDS)} bonds", f"{2 * len(mol_angles)} angles",
             f"{2 * len(dih_lines)} dihedrals", f"{2 * len(IMPROPERS)} impropers", "2 atom types", "2 bond types",
             f"{len(ANGLE_COEFFS)} angle types", f"{len(coeffs)} dihedral types", "1 improper types", "",
             "-15.0 15.0 xlo xhi", "-15.0 15.0 ylo yhi", "-15.0 15.0 zlo zhi", "", "Masses", "", "1 12.0", "2 16.0", "",
             "Bond Coeffs # harmonic", "", "1 300.0 1.5", "2 250.0 1.45", "", "Angle Coeffs # hybrid", ""]
    lines += [f"{t + 1} {c}" for t, c in enumerate(ANGLE_COEFFS)]
    lines += ["", "Dihedral Coeffs # " + {"styles": "hybrid"}.get(mode, mode), ""]
    lines += [f"{t + 1} {c}" for t, c in enumerate(coeffs)]
    lines += ["", "Improper Coeffs # harmonic", "", "1 30.0 10.0", "", "Atoms # full", ""]
    shift = np.array([4.0, 1.0, -2.0])
    for m in range(2):
        for a in range(n):
            q = [0.3, -0.2, 0.1, -0.4, 0.25][a % 5] * (1 if m == 0 else -1)
            x = coords[a] + m * shift
            lines.append(f"{m * n + a + 1} {m + 1} {1 + a % 2} {q} {x[0]:.10f} {x[1]:.10f} {x[2]:.10f}")
    lines += ["", "Bonds", ""]
    for m in range(2):
        for b, (i, j) in enumerate(BONDS):
            lines.append(f"{m * len(BONDS) + b + 1} {1 + b % 2} {i + m * n} {j + m * n}")
    lines += ["", "Angles", ""]
    for m in range(2):
        for a, (i, j, k) in enumerate(mol_angles):
            lines.append(f"{m * len(mol_angles) + a + 1} {a % len(ANGLE_COEFFS) + 1} {i + m * n} {j + m * n} {k + m * n}")
    lines += ["", "Dihedrals", ""]
    for m in range(2):
        for q, (t, (i, j, k, l)) in enumerate(dih_lines):
            lines.append(f"{m * len(dih_lines) + q + 1} {t} {i + m * n} {j + m * n} {k + m * n} {l + m * n}")
    lines += ["", "Impropers", ""]
    for m in range(2):
        for q, (i, j, k, l) in enumerate(IMPROPERS):
            lines.append(f"{m * len(IMPROPERS) + q + 1} 1 {i + m * n} {j + m * n} {k + m * n} {l + m * n}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


LAMMPS_IN = """units real
atom_style full
boundary p p p
pair_style lj/cut/coul/cut 10.0
bond_style harmonic
angle_style hybrid harmonic cosine cosine/squared
dihedral_style {dihedral_style}
improper_style harmonic
special_bonds lj 0.0 0.0 0.5 coul 0.0 0.0 0.8333
read_data {data}
pair_coeff 1 1 0.1 3.5
pair_coeff 2 2 0.2 3.0
pair_coeff 1 2 0.15 3.2
thermo_style custom step pe evdwl ecoul ebond eangle edihed eimp press
thermo_modify format float %.17g
dump d all custom 1 {dump} id fx fy fz
dump_modify d format float %.17g sort id
run 0
"""

PAIRMD_YAML = """units: real
steps: 0
system:
  types: [{{name: C, mass: 12.0}}, {{name: O, mass: 16.0}}]
  file: {{path: {data}}}
  velocities: {{missing: zero}}
force_field:
  special_bonds: {{lj: [0.0, 0.0, 0.5], coulomb: [0.0, 0.0, 0.8333]}}
  pair:
    - potential: lj
      cutoff: 10.0
      coeffs: [{{types: [C, C], epsilon: 0.1, sigma: 3.5}}, {{types: [O, O], epsilon: 0.2, sigma: 3.0}},
               {{types: [C, O], epsilon: 0.15, sigma: 3.2}}]
    - {{potential: coulomb, cutoff: 10.0}}
  bonds: [{{name: b1, potential: harmonic, k: 600.0, r0: 1.5}}, {{name: b2, potential: harmonic, k: 500.0, r0: 1.45}}]
  angles: file
  dihedrals: {dihedrals}
  impropers: file
neighbor: {{skin: 1.0}}
integrator: {{kind: nve, dt: 1.0}}
backend: cpu
output: {{thermo_every: 1, progress: off, trajectory: {{every: 1, forces_every: 1}}}}
"""


def run_lammps(lmp, scratch, data, dihedral_style):
    dump = os.path.join(scratch, "forces.dump")
    inp = os.path.join(scratch, "in.bonded")
    with open(inp, "w") as f:
        f.write(LAMMPS_IN.format(data=data, dump=dump, dihedral_style=dihedral_style))
    out = subprocess.run([lmp, "-in", inp, "-log", "none"], cwd=scratch, capture_output=True, text=True)
    log = out.stdout
    if out.returncode != 0:
        sys.exit("lmp failed:\n" + log[-3000:])
    header = None
    thermo = None
    for line in log.splitlines():
        w = line.split()
        if w[:2] == ["Step", "PotEng"]:
            header = w
        elif header and w and w[0] == "0" and len(w) == len(header):
            thermo = dict(zip(header, map(float, w)))
            break
    f = {}
    with open(dump) as d:
        rows = d.read().splitlines()
    start = rows.index(next(r for r in rows if r.startswith("ITEM: ATOMS"))) + 1
    for r in rows[start:]:
        w = r.split()
        f[int(w[0])] = [float(v) for v in w[1:4]]
    return thermo, np.array([f[k] for k in sorted(f)])


def run_pairmd(pairmd, scratch, data, dihedrals, name):
    cfg = os.path.join(scratch, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(PAIRMD_YAML.format(data=data, dihedrals=dihedrals))
    out = subprocess.run([pairmd, "run", cfg, "--output", os.path.join(scratch, name), "--overwrite"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("pairmd failed:\n" + out.stdout[-2000:] + out.stderr[-2000:])
    with open(os.path.join(scratch, name + ".thermo.csv")) as f:
        row = next(csv.DictReader(f))
    energies = {k.split("[")[0]: float(v) for k, v in row.items()}
    with h5py.File(os.path.join(scratch, name + ".h5"), "r") as h:
        forces = np.array(h["particles/all/force/value"][0])
    return energies, forces


def compare(what, ours, theirs, scale, tol=1e-9):
    err = abs(ours - theirs)
    ok = err <= tol * max(1.0, scale)
    print(f"{what:>12}: pairmd {ours:.12g}  lammps {theirs:.12g}  |diff| {err:.2e}  {'ok' if ok else 'FAIL'}")
    return ok


def save_reference(directory, case, data, thermo, forces, lmp):
    """The case's data file, config and LAMMPS's numbers, for the C++ tests (see the docstring)."""
    os.makedirs(directory, exist_ok=True)
    shutil.copyfile(data, os.path.join(directory, f"data.{case}"))
    with open(os.path.join(directory, f"{case}.yaml"), "w") as f:
        f.write(PAIRMD_YAML.format(data="@DATA@", dihedrals="file"))
    version = subprocess.run([lmp, "-h"], capture_output=True, text=True).stdout.splitlines()
    version = next((v.strip() for v in version if v.startswith("Large-scale")), "LAMMPS")
    with open(os.path.join(directory, f"{case}.lammps"), "w") as f:
        f.write(f"# {version}: run 0 on the case's data file (tests/python/check_lammps_bonded.py --save)\n")
        for k in ("PotEng", "E_vdwl", "E_coul", "E_bond", "E_angle", "E_dihed", "E_impro", "Press"):
            f.write(f"{k} {thermo[k]!r}\n")
        for i, row in enumerate(forces):
            f.write(f"force {i + 1} {row[0]!r} {row[1]!r} {row[2]!r}\n")


def main():
    args = sys.argv[1:]
    save = None
    if "--save" in args:
        at = args.index("--save")
        if at + 1 >= len(args):
            sys.exit(__doc__)
        save = args[at + 1]
        del args[at:at + 2]
    if len(args) < 2:
        sys.exit(__doc__)
    pairmd, scratch = args[0], args[1]
    lmp = args[2] if len(args) > 2 else shutil.which("lmp")
    if not lmp or not shutil.which(lmp):
        skip("no `lmp` on the PATH (Debian's lammps package: apt-get install lammps)")
    os.makedirs(scratch, exist_ok=True)
    coords = positions(random.Random(32))
    ok = True
    for case, theirs, style in (("styles", "styles", "hybrid harmonic opls multi/harmonic charmm"),
                                ("fourier", "charmm", "charmm")):
        ours = os.path.join(scratch, f"data.{case}")
        write_data(ours, coords, case)
        lammps_data = os.path.join(scratch, f"data.{theirs}")
        write_data(lammps_data, coords, theirs)
        thermo, f_lmp = run_lammps(lmp, scratch, lammps_data, style)
        if save:
            save_reference(save, case, ours, thermo, f_lmp, lmp)
        energies, f_ours = run_pairmd(pairmd, scratch, ours, "file", case)
        print(f"-- {case}: {len(f_lmp)} atoms")
        fscale = float(np.abs(f_lmp).max())
        for ours, theirs in (("energy_lj", "E_vdwl"), ("energy_coulomb", "E_coul"), ("energy_bond", "E_bond"),
                             ("energy_angle", "E_angle"), ("energy_dihedral", "E_dihed"),
                             ("energy_improper", "E_impro"), ("potential_energy", "PotEng"), ("pressure", "Press")):
            ok &= compare(ours, energies[ours], thermo[theirs], abs(thermo[theirs]) + (fscale if ours == "pressure" else 0))
        err = float(np.abs(f_ours - f_lmp).max())
        good = err <= 1e-9 * fscale
        print(f"{'forces':>12}: max |F| {fscale:.6g}, max |dF| {err:.2e}  {'ok' if good else 'FAIL'}")
        ok &= good
        # not trivially equal: each kind of term contributes
        for theirs in ("E_angle", "E_dihed", "E_impro", "E_vdwl", "E_coul"):
            ok &= abs(thermo[theirs]) > 1e-3
    print("PASSED" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
