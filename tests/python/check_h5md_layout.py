#!/usr/bin/python3
"""Opens pairmd trajectories the way users do: h5py checks the H5MD 1.1 layout and its
attributes; MDAnalysis (Debian's python3-mdanalysis, its H5MD reader) reads positions, box and
times, which must equal what the engine wrote (the checkpoint of the last step holds the
engine's state bit for bit).

usage: check_h5md_layout.py PAIRMD_BINARY SCRATCH_DIR
"""
import os
import subprocess
import sys
import warnings

import h5py
import numpy as np

warnings.filterwarnings("ignore")

LJ = """title: layout check (LJ units)
units: lj
steps: 300
system:
  types: [{name: A, mass: 1.0}]
  lattice: {kind: fcc, cells: 4, density: 0.8442}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 3}
output:
  thermo_every: 50
  progress: off
  trajectory: {every: 100, velocities_every: 100, forces_every: 100, observables_every: 50, compression: 4}
"""

# Argon in real units (as LAMMPS: Angstrom, fs, kcal/mol): MDAnalysis converts time to ps.
REAL = """title: layout check (real units)
units: real
steps: 200
system:
  types: [{name: Ar, mass: 39.948}]
  lattice: {kind: fcc, cells: 4, density: 0.021}
force_field:
  pair:
    - potential: lj
      cutoff: 8.5
      coeffs: [{types: [Ar, Ar], epsilon: 0.238, sigma: 3.405}]
integrator: {kind: langevin, dt: 2.0, temperature: 120, friction: 0.005, seed: 5}
output:
  thermo_every: 100
  progress: off
  trajectory: {every: 100, velocities_every: 100, observables_every: 100}
"""


def run(binary, work, name, text):
    cfg = os.path.join(work, name + ".yaml")
    with open(cfg, "w") as f:
        f.write(text)
    # --overwrite: SCRATCH_DIR keeps the files of the last time this check ran.
    r = subprocess.run([binary, "run", cfg, "--backend", "cpu", "--output", os.path.join(work, name), "--overwrite"],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"pairmd run {name} failed ({r.returncode}):\n{r.stderr}")
    return os.path.join(work, name + ".h5"), os.path.join(work, name + ".checkpoint.h5"), text


def check(cond, what):
    if not cond:
        sys.exit("FAILED: " + what)
    print("ok:", what)


def layout(path, config_text, real):
    with h5py.File(path, "r") as f:
        check(list(f["h5md"].attrs["version"]) == [1, 1], "h5md version 1.1")
        check(f["h5md/creator"].attrs["name"] == "pairmd" and "version" in f["h5md/creator"].attrs, "h5md/creator")
        check("name" in f["h5md/author"].attrs, "h5md/author")
        box = f["particles/all/box"]
        check(box.attrs["dimension"] == 3, "box dimension")
        check(list(box.attrs["boundary"]) == ["periodic"] * 3, "box boundary")
        for q in ("position", "image", "velocity", "box/edges"):
            g = f["particles/all/" + q]
            check(g["step"].shape[0] == g["time"].shape[0] == g["value"].shape[0], q + ": step, time, value agree")
            check(g["value"].chunks is not None, q + " is chunked")
        pos = f["particles/all/position/value"]
        check(pos.dtype == np.float64 and pos.shape[1:] == (256, 3), "position float64 [frames, 256, 3]")
        check(f["particles/all/image/value"].dtype == np.int32, "image int32")
        check(f["particles/all/species"].dtype == np.int32 and f["particles/all/species"].shape == (256,), "species")
        check(f["particles/all/mass"].shape == (256,) and f["particles/all/charge"].shape == (256,), "mass, charge")
        for o in ("potential_energy", "kinetic_energy", "total_energy", "temperature", "pressure"):
            check(f["observables/" + o + "/value"].shape == f["observables/" + o + "/step"].shape, "observables/" + o)
        tot = f["observables/total_energy/value"][:]
        pe, ke = f["observables/potential_energy/value"][:], f["observables/kinetic_energy/value"][:]
        check(np.allclose(tot, pe + ke, rtol=1e-12, atol=0), "total = potential + kinetic")
        stored = f["parameters/config"][()]
        stored = stored.decode() if isinstance(stored, bytes) else stored
        check(stored == config_text, "parameters/config is the YAML verbatim")
        if real:
            check(f["particles/all/position/value"].attrs["unit"] == "Angstrom", "position unit Angstrom")
            check(f["particles/all/position/time"].attrs["unit"] == "fs", "time unit fs")
            check(f["observables/temperature/value"].attrs["unit"] == "K", "temperature unit K")
        else:
            check("unit" not in f["particles/all/position/value"].attrs, "reduced LJ values carry no unit")
            check(f["particles/all/position/value"].compression == "gzip", "compression on request")


def mdanalysis(path, ckpt, real, dt):
    import MDAnalysis as mda
    with h5py.File(path, "r") as f:
        pos = f["particles/all/position/value"][:]
        steps = f["particles/all/position/step"][:]
        times = f["particles/all/position/time"][:]
        edges = f["particles/all/box/edges/value"][:]
    u = mda.Universe.empty(pos.shape[1], trajectory=True)
    u.load_new(path, format="H5MD", convert_units=real)
    check(len(u.trajectory) == len(steps), f"MDAnalysis sees {len(steps)} frames")
    for i, ts in enumerate(u.trajectory):
        # MDAnalysis keeps float32 coordinates: equal to the float64 values rounded.
        check(np.array_equal(ts.positions, pos[i].astype(np.float32)), f"frame {i}: positions")
        check(np.allclose(ts.dimensions[:3], np.diag(edges[i]), rtol=1e-6) and np.allclose(ts.dimensions[3:], 90),
              f"frame {i}: box")
        t = times[i] / 1000 if real else times[i]  # MDAnalysis keeps time in ps
        check(abs(ts.time - t) < 1e-9 * max(1.0, t) and ts.data["step"] == steps[i], f"frame {i}: time, step")
        check(abs(times[i] - steps[i] * dt) < 1e-12 * max(1.0, times[i]), f"frame {i}: time = step * dt")
    with h5py.File(ckpt, "r") as c:
        check(c["state"].attrs["step"] == steps[-1], "checkpoint is at the last frame")
        check(np.array_equal(c["state/position"][:], pos[-1]), "last frame = engine state bit for bit")


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    path, ck, text = run(binary, work, "lj", LJ)
    layout(path, text, real=False)
    mdanalysis(path, ck, real=False, dt=0.005)
    path, ck, text = run(binary, work, "real", REAL)
    layout(path, text, real=True)
    mdanalysis(path, ck, real=True, dt=2.0)
    print("all checks passed")


if __name__ == "__main__":
    main()
