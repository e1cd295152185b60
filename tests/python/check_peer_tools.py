#!/usr/bin/python3
"""pairmd's files in the tools MD users have, as they are (issue #15):

debian  (Debian's /usr/bin/python3: python3-gsd 2.7, python3-mdanalysis 2.4, h5py)
  - the gsd package reads pairmd's GSD trajectory: types, typeid, masses, charges, bonds, angles
    and dihedrals with their types, box, positions (float32, in HOOMD's centred box), images and
    velocities equal the H5MD trajectory of the same run;
  - a GSD file written by the gsd package starts a pairmd run;
  - MDAnalysis builds a Universe from the GSD file alone (types, charges, masses, bonds, angles,
    dihedrals) and python/pairmd_mda.py unwraps it with the images (and reads the angles and
    dihedrals of the H5MD file);
  - PDB -> MDAnalysis -> pairmd: pairmd_mda.write_start (types, masses, charges, bonds) and
    MDAnalysis's own H5MDWriter (positions, box, velocities with units) both start pairmd runs.
peers   (a virtual environment with PyPI's ovito and gsd 5, made by scripts/setup.sh)
  - OVITO 3.17 opens the GSD trajectory: particle count, types, bonds, box, positions, images;
  - gsd 5 reads it too;
  - files OVITO writes (LAMMPS data with the angles and dihedrals, extended XYZ) start pairmd
    runs.

usage: check_peer_tools.py debian PAIRMD SCRATCH
       check_peer_tools.py peers PAIRMD SCRATCH VENV_PYTHON   (exit 77: no such environment)
"""
import os
import subprocess
import sys
import warnings

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

POLYMER = """title: peer tools (charged chains, real units)
units: real
steps: 400
system:
  types: [{name: M, mass: 14.0, charge: -1.0}, {name: C, mass: 23.0, charge: 1.0}]
  chains: {count: 6, length: 8, density: 0.004, bond: b, angle: a, dihedral: d, bond_length: 4.0, monomer_type: M,
           charged_every: 2, counterion_type: C, min_distance: 3.5, seed: 3}
  relax: {steps: 300, max_move: 0.05}
force_field:
  exclusions: bonds
  bonds: [{name: b, potential: harmonic, k: 2.0, r0: 4.0}]
  angles: [{name: a, potential: cosine, k: 0.5}]
  dihedrals: [{name: d, potential: opls, k1: 0.4, k2: 0.0, k3: 0.2, k4: 0.0}]
  pair:
    - potential: wca
      coeffs: [{types: [M, M], epsilon: 0.5, sigma: 3.6}, {types: [M, C], epsilon: 0.5, sigma: 3.6}, {types: [C, C], epsilon: 0.5, sigma: 3.6}]
integrator: {kind: langevin, dt: 5.0, temperature: 300, friction: 0.001, seed: 7}
output:
  thermo_every: 100
  progress: off
  trajectory: {every: 100, velocities_every: 100}
  gsd: {every: 100, velocities: true}
"""

START = """units: real
steps: 20
system:
  types: {types}
  file: {file}
force_field:
  pair:
    - potential: wca
      coeffs: {coeffs}
integrator: {{kind: langevin, dt: 2.0, temperature: 300, friction: 0.01, seed: 9}}
output: {{thermo_every: 10, progress: off}}
"""


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)
    print("ok:", what)


def run(pairmd, work, name, text, extra=()):
    cfg = os.path.join(work, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(text)
    r = subprocess.run([pairmd, "run", cfg, "--backend", "cpu", "--output", os.path.join(work, name), "--overwrite", *extra],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"pairmd run {name} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r


def start_config(types, file, coeff_types):
    coeffs = "[" + ", ".join("{types: [%s, %s], epsilon: 0.2, sigma: 3.0}" % (a, b) for a, b in coeff_types) + "]"
    return START.format(types=types, file=file, coeffs=coeffs)


def polymer_run(pairmd, work):
    run(pairmd, work, "poly", POLYMER)  # --overwrite: SCRATCH keeps the files of the last check
    return os.path.join(work, "poly")


def debian(pairmd, work):
    try:
        import gsd
        import gsd.hoomd
        import h5py
        import MDAnalysis as mda
        import numpy as np
    except ImportError as e:
        print("SKIP: " + str(e) + " (Debian: python3-gsd python3-mdanalysis python3-h5py)")
        sys.exit(77)
    import pairmd_mda

    prefix = polymer_run(pairmd, work)
    # -- the gsd package (Debian 2.7) reads the GSD file; it matches the H5MD file of the run.
    with h5py.File(prefix + ".h5", "r") as f:
        pos = f["particles/all/position/value"][:]
        img = f["particles/all/image/value"][:]
        vel = f["particles/all/velocity/value"][:]
        steps = f["particles/all/position/step"][:]
        lo = f["particles/all/box/offset"][:]
        edges = f["particles/all/box/edges/value"][:]
        species = f["particles/all/species"][:]
        mass, charge = f["particles/all/mass"][:], f["particles/all/charge"][:]
        bonds = f["connectivity/bonds"][:]
        angles, dihedrals = f["connectivity/angles"][:], f["connectivity/dihedrals"][:]
    check(len(angles) == 6 * 6 and len(dihedrals) == 6 * 5, "H5MD: connectivity/angles and dihedrals of 6 chains of 8")
    t = gsd.hoomd.open(prefix + ".gsd", "rb")
    check(len(t) == len(steps), f"gsd {gsd.__version__}: {len(t)} frames, as the H5MD file")
    for k, frame in enumerate(t):
        L = edges[k]
        check(frame.configuration.step == steps[k], f"frame {k}: step {steps[k]}")
        check(np.allclose(frame.configuration.box[:3], L) and not np.any(frame.configuration.box[3:]), f"frame {k}: box")
        check(np.array_equal(frame.particles.position, (pos[k] - lo - L / 2).astype(np.float32)),
              f"frame {k}: positions = H5MD positions in HOOMD's centred box (float32)")
        check(np.array_equal(frame.particles.image, img[k]), f"frame {k}: images")
        check(np.array_equal(frame.particles.velocity, vel[k].astype(np.float32)), f"frame {k}: velocities")
    f0 = t[len(t) - 1]
    check(list(f0.particles.types) == ["M", "C"] and np.array_equal(f0.particles.typeid, species), "types and typeid")
    check(np.array_equal(f0.particles.mass, mass.astype(np.float32)) and np.array_equal(f0.particles.charge, charge.astype(np.float32)),
          "masses and charges")
    check(f0.bonds.N == len(bonds) and np.array_equal(f0.bonds.group, bonds) and list(f0.bonds.types) == ["b"], "bonds and bond types")
    check(f0.angles.N == len(angles) and np.array_equal(f0.angles.group, angles) and list(f0.angles.types) == ["a"],
          "angles and angle types")
    check(f0.dihedrals.N == len(dihedrals) and np.array_equal(f0.dihedrals.group, dihedrals) and
          list(f0.dihedrals.types) == ["d"], "dihedrals and dihedral types")
    check(abs(f0.log["temperature"][0] - 300) < 150, "log/temperature")

    # -- MDAnalysis: a Universe from the GSD file alone, with topology; the helper unwraps it.
    u = mda.Universe(prefix + ".gsd")
    check(u.atoms.n_atoms == len(species) and list(u.atoms.types[:2]) == ["M", "M"], f"MDAnalysis {mda.__version__}: Universe(run.gsd) has types")
    check(np.allclose(u.atoms.charges, charge) and np.allclose(u.atoms.masses, mass), "MDAnalysis: charges and masses from the GSD file")
    check(len(u.bonds) == len(bonds) and len(u.atoms.fragments) == 6 + 24, "MDAnalysis: bonds (6 chains and 24 counterions)")
    check(len(u.angles) == len(angles) and len(u.dihedrals) == len(dihedrals), "MDAnalysis: angles and dihedrals from the GSD file")
    h = pairmd_mda.universe(prefix + ".gsd")
    for k, ts in enumerate(h.trajectory):
        unwrapped = (pos[k] - lo - edges[k] / 2 + img[k] * edges[k]).astype(np.float32)
        check(np.allclose(ts.positions, unwrapped, atol=1e-3), f"pairmd_mda.universe(run.gsd) frame {k}: unwrapped")
    hh = pairmd_mda.universe(prefix + ".h5")
    check(len(hh.bonds) == len(bonds) and list(hh.atoms.types[:1]) == ["M"] and np.allclose(hh.atoms.charges, charge),
          "pairmd_mda.universe(run.h5): types, charges, bonds from the H5MD file")
    check(len(hh.angles) == len(angles) and len(hh.dihedrals) == len(dihedrals) and
          sorted(hh.angles[0].indices) == sorted(angles[0]), "pairmd_mda.universe(run.h5): angles and dihedrals")
    for k, ts in enumerate(hh.trajectory):
        check(np.allclose(ts.positions, (pos[k] + img[k] * edges[k]).astype(np.float32), atol=1e-3) and np.isclose(ts.time, k * 100 * 5.0 / 1000),
              f"pairmd_mda.universe(run.h5) frame {k}: unwrapped, time in ps")

    # -- examples/plot_energies.py plots both trajectories.
    for ext in (".h5", ".gsd"):
        png = prefix + ext.replace(".", "_") + ".png"
        r = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "examples", "plot_energies.py"), prefix + ext, png],
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 0 and os.path.getsize(png) > 10000, f"examples/plot_energies.py plots run{ext} ({r.stderr[-200:]})")

    # -- A GSD file written by the gsd package starts a pairmd run (types by name).
    snap = gsd.hoomd.Snapshot()
    snap.configuration.step = 1000
    snap.configuration.box = [30, 30, 30, 0, 0, 0]
    snap.particles.N = 8
    snap.particles.types = ["Ar", "Kr"]
    snap.particles.typeid = [0, 1] * 4
    snap.particles.mass = [39.948, 83.798] * 4
    grid = np.array([[x, y, z] for x in (-7, 7) for y in (-7, 7) for z in (-7, 7)], dtype=np.float32)
    snap.particles.position = grid
    snap.particles.velocity = np.full((8, 3), 0.001, dtype=np.float32)
    with gsd.hoomd.open(os.path.join(work, "by_gsd.gsd"), "wb") as g:
        g.append(snap)
    r = run(pairmd, work, "from_gsd", start_config("[{name: Kr, mass: 1}, {name: Ar, mass: 1}]", "{path: by_gsd.gsd}",
                                                   [("Ar", "Ar"), ("Ar", "Kr"), ("Kr", "Kr")]))
    check("system: 8 particles" in r.stdout, "pairmd starts from a GSD file the gsd package wrote")
    with h5py.File(os.path.join(work, "from_gsd.checkpoint.h5"), "r") as c:
        check(c["state"].attrs["step"] == 1020, "... at its step (1000 + 20)")
        check(list(c["state/mass"][:2]) == [np.float32(39.948), np.float32(83.798)], "... with its masses")

    # -- PDB -> MDAnalysis -> pairmd: the helper's start file (types, masses, charges, bonds) and
    #    MDAnalysis's own H5MDWriter (positions, box, velocities).
    pdb = os.path.join(work, "two.pdb")
    with open(pdb, "w") as f:
        f.write("CRYST1   30.000   30.000   30.000  90.00  90.00  90.00 P 1           1\n")
        atoms = [("N", 5.0, 5.0, 5.0), ("C", 6.4, 5.0, 5.0), ("C", 7.8, 5.0, 5.0), ("O", 9.2, 5.0, 5.0)]
        for k, (el, x, y, z) in enumerate(atoms):
            f.write("ATOM  %5d  %-3s ALA A   1    %8.3f%8.3f%8.3f  1.00  0.00          %2s\n" % (k + 1, el, x, y, z, el))
        f.write("CONECT    1    2\nCONECT    2    1    3\nCONECT    3    2    4\nCONECT    4    3\nEND\n")
    up = mda.Universe(pdb)
    if os.path.exists(os.path.join(work, "pdb.h5")):
        os.remove(os.path.join(work, "pdb.h5"))
    pairmd_mda.write_start(up.atoms, os.path.join(work, "pdb.h5"), type_names=["C", "N", "O"])
    types = "[{name: C, mass: 12.011}, {name: N, mass: 14.007}, {name: O, mass: 15.999}]"
    pairs = [("C", "C"), ("C", "N"), ("C", "O"), ("N", "N"), ("N", "O"), ("O", "O")]
    text = start_config(types, "{path: pdb.h5}", pairs).replace(
        "force_field:\n", "force_field:\n  bonds: [{name: b, potential: harmonic, k: 300, r0: 1.4}]\n")
    r = run(pairmd, work, "from_pdb", text)
    check("system: 4 particles, 3 type(s), 3 bonds" in r.stdout and "drawn from Maxwell-Boltzmann" in r.stdout,
          "PDB -> pairmd_mda.write_start -> pairmd: 4 particles, 3 types, 3 bonds, velocities drawn")
    with h5py.File(os.path.join(work, "from_pdb.checkpoint.h5"), "r") as c:
        check(list(c["state/type"][:]) == [1, 0, 0, 2], "... types by name (N C C O)")
    # GRO (with velocities, nm/ps) -> MDAnalysis's own H5MDWriter -> pairmd.
    gro = os.path.join(work, "four.gro")
    with open(gro, "w") as f:
        f.write("four atoms\n    4\n")
        for k, (el, x, y, z) in enumerate(atoms):
            f.write("%5d%-5s%5s%5d%8.3f%8.3f%8.3f%8.4f%8.4f%8.4f\n" % (1, "ALA", el, k + 1, x / 10, y / 10, z / 10, 0.1 * (k + 1), 0.0, -0.05))
        f.write("   3.00000   3.00000   3.00000\n")
    ug = mda.Universe(gro)
    mda_h5 = os.path.join(work, "mda_writer.h5")
    if os.path.exists(mda_h5):
        os.remove(mda_h5)
    with mda.Writer(mda_h5, n_atoms=4, format="H5MD", positions=True, velocities=True) as w:
        w.write(ug)
    w.h5md_file.close()  # MDAnalysis 2.4's H5MDWriter.close() leaves the file open (and locked)
    r = run(pairmd, work, "from_mda", start_config("[{name: C, mass: 12.0}]", "{path: mda_writer.h5}", [("C", "C")]),
            ["--steps", "0"])
    check("velocities converted from nm ps-1 to Angstrom fs-1" in r.stdout and "positions and box converted from nm" in r.stdout,
          "GRO -> MDAnalysis's H5MDWriter (nm, nm/ps) -> pairmd: converted to Angstrom, Angstrom/fs")
    with h5py.File(os.path.join(work, "from_mda.checkpoint.h5"), "r") as c:
        want_v = np.array([[1.0 * (k + 1), 0.0, -0.5] for k in range(4)]) / 1000.0  # nm/ps -> A/fs
        check(np.allclose(c["state/velocity"][:], want_v, atol=1e-7), "... velocities in Angstrom/fs")
        check(np.allclose(c["state/position"][:], up.atoms.positions, atol=1e-4), "... positions in Angstrom")
    print("all checks passed")


OVITO_SCRIPT = r"""
import sys, warnings
warnings.filterwarnings("ignore")
import numpy as np, ovito, gsd.hoomd, gsd.version
from ovito.io import import_file, export_file
prefix, work = sys.argv[1], sys.argv[2]
ref = np.load(prefix + "_ref.npz")
def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)
    print("ok:", what)
p = import_file(prefix + ".gsd")
check(p.source.num_frames == len(ref["steps"]), f"OVITO {ovito.version_string}: {p.source.num_frames} frames of the GSD file")
for k in range(p.source.num_frames):
    d = p.compute(k)
    L = ref["edges"][k]
    check(d.attributes["Timestep"] == ref["steps"][k], f"OVITO frame {k}: step")
    check(np.allclose(np.diagonal(d.cell[:, :3]), L) and all(d.cell.pbc), f"OVITO frame {k}: periodic box")
    want = (ref["pos"][k] - ref["lo"] - L / 2).astype(np.float32)
    check(np.allclose(d.particles.positions, want, atol=1e-5), f"OVITO frame {k}: positions")
    check(np.array_equal(d.particles["Periodic Image"], ref["img"][k]), f"OVITO frame {k}: images")
    names = [t.name for t in d.particles.particle_types.types]
    check(names == ["M", "C"] and np.array_equal(d.particles.particle_types, ref["species"]), f"OVITO frame {k}: types")
    check(d.particles.bonds.count == len(ref["bonds"]), f"OVITO frame {k}: {d.particles.bonds.count} bonds")
    check(np.allclose(d.particles["Charge"], ref["charge"]) and np.allclose(d.particles["Mass"], ref["mass"]), f"OVITO frame {k}: charges, masses")
t = gsd.hoomd.open(prefix + ".gsd", "r")
check(len(t) == len(ref["steps"]) and np.array_equal(t[len(t) - 1].particles.image, ref["img"][-1]),
      f"gsd {gsd.version.version} (PyPI) reads the GSD file")
# Files OVITO writes start pairmd runs.
d = p.compute(len(ref["steps"]) - 1)
export_file(p, work + "/ovito.data", "lammps/data", atom_style="full", consecutive_type_ids=True, export_type_names=True,
            frame=len(ref["steps"]) - 1)
export_file(p, work + "/ovito.xyz", "xyz", columns=["Particle Type", "Position.X", "Position.Y", "Position.Z"],
            frame=len(ref["steps"]) - 1)
print("ok: OVITO exported LAMMPS data (full) and XYZ")
"""


def peers(pairmd, work, python):
    if not python or not os.access(python, os.X_OK):
        print(f"SKIP: no Python with PyPI's ovito and gsd at '{python}' (scripts/setup.sh makes one with pip; "
              "it needs network access to PyPI)")
        sys.exit(77)
    probe = subprocess.run([python, "-c", "import ovito, gsd.hoomd"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("SKIP: ovito or gsd does not import in " + python + ": " + probe.stderr.strip().splitlines()[-1])
        sys.exit(77)
    import h5py
    import numpy as np

    prefix = polymer_run(pairmd, work)
    with h5py.File(prefix + ".h5", "r") as f:
        np.savez(prefix + "_ref.npz", pos=f["particles/all/position/value"][:], img=f["particles/all/image/value"][:],
                 steps=f["particles/all/position/step"][:], lo=f["particles/all/box/offset"][:],
                 edges=f["particles/all/box/edges/value"][:], species=f["particles/all/species"][:],
                 mass=f["particles/all/mass"][:], charge=f["particles/all/charge"][:], bonds=f["connectivity/bonds"][:])
    script = os.path.join(work, "ovito_check.py")
    with open(script, "w") as f:
        f.write(OVITO_SCRIPT)
    r = subprocess.run([python, script, prefix, work], capture_output=True, text=True, timeout=600)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        sys.exit("FAILED in " + python + ":\n" + r.stderr[-3000:])
    # pairmd reads what OVITO wrote: LAMMPS data (full style; OVITO names the types in a
    # labels section or by number) and extended XYZ (no box on the line: a box is given).
    types = "[{name: M, mass: 14.0, charge: -1.0}, {name: C, mass: 23.0, charge: 1.0}]"
    pairs = [("M", "M"), ("M", "C"), ("C", "C")]
    # OVITO carries the GSD file's angles and dihedrals into the data file (types by order).
    text = start_config(types, "{path: ovito.data}", pairs).replace(
        "force_field:\n", "force_field:\n  bonds: [{name: b, potential: harmonic, k: 2.0, r0: 4.0}]\n"
        "  angles: [{name: a, potential: cosine, k: 0.5}]\n"
        "  dihedrals: [{name: d, potential: opls, k1: 0.4, k2: 0.0, k3: 0.2, k4: 0.0}]\n")
    r = run(pairmd, work, "from_ovito_data", text, ["--steps", "0"])
    check("system: 72 particles, 2 type(s), 42 bonds, 36 angles, 30 dihedrals" in r.stdout,
          "pairmd starts from OVITO's LAMMPS data file (72 particles, 42 bonds, 36 angles, 30 dihedrals)")
    with h5py.File(prefix + ".h5", "r") as f, h5py.File(os.path.join(work, "from_ovito_data.checkpoint.h5"), "r") as c:
        L = f["particles/all/box/edges/value"][-1]
        want = f["particles/all/position/value"][-1] - f["particles/all/box/offset"][:] + f["particles/all/image/value"][-1] * L
        check(np.array_equal(c["state/type"][:], f["particles/all/species"][:]), "... with the types of the run")
        got = c["state/position"][:] + c["state/image"][:] * L
        lo = got.min(axis=0) - want.min(axis=0)
        check(np.allclose(got - lo, want, atol=1e-3), "... and its unwrapped positions (to OVITO's precision)")
    with open(os.path.join(work, "ovito.xyz")) as f:
        first = f.read().splitlines()[1]
    text = start_config(types, "{path: ovito.xyz}", pairs)
    r = run(pairmd, work, "from_ovito_xyz", text, ["--steps", "0"])
    check("system: 72 particles, 2 type(s)" in r.stdout, f"pairmd starts from OVITO's extended XYZ ({first[:50]}...)")
    print("all checks passed")


def main():
    mode, pairmd, work = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    os.chdir(work)
    if mode == "debian":
        debian(pairmd, work)
    else:
        peers(pairmd, work, sys.argv[4] if len(sys.argv) > 4 else "")


if __name__ == "__main__":
    main()
