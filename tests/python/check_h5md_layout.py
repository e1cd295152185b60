#!/usr/bin/python3
"""Opens pairmd trajectories the way users do: h5py checks the H5MD 1.1 layout against the
specification (fixed-length strings, step and time of image and box shared with position's by
hard links, a cuboid box as the vector of its edges, potential maps outside observables);
MDAnalysis (Debian's python3-mdanalysis 2.4, its H5MD reader) opens the files as they are, and
python/pairmd_mda.py gives a Universe with topology, box and unwrapped positions. Everything
read must equal what the engine wrote (the checkpoint of the last step holds the engine's state
bit for bit).

usage: check_h5md_layout.py PAIRMD_BINARY SCRATCH_DIR
"""
import os
import subprocess
import sys
import warnings

import h5py
import numpy as np

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

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


# Charged beads with a potential map every 100 steps: the maps go to /fields, and MDAnalysis
# (which indexes every observables/<name>/value by frame) still opens the file.
MAPS = """title: layout check (potential maps)
units: lj
steps: 200
system:
  types: [{name: P, mass: 1.0, charge: 1.0}, {name: N, mass: 1.0, charge: -1.0}]
  lattice: {kind: sc, cells: 4, density: 0.3}
  add_particles: [{type: N, position: [1.12, 1.12, 1.12]}]
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{types: [P, P]}, {types: [P, N]}, {types: [N, N]}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, seed: 3}
output:
  thermo_every: 100
  progress: off
  trajectory: {every: 100}
analysis:
  potential_map: {every: 100, spacing: 1.0, kernel: cpu}
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


def text(v):
    return v.decode() if isinstance(v, bytes) else v


def attr_strings_fixed(obj, where):
    """Every string attribute of obj and below is fixed-length (H5MD), but `unit` (see
    engine/h5md_writer.cpp: MDAnalysis reads units only as str, which h5py gives for
    variable-length strings)."""
    bad = []

    def visit(name, o):
        for key in o.attrs:
            t = o.attrs.get_id(key).get_type()
            if isinstance(t, h5py.h5t.TypeStringID):
                variable = t.is_variable_str()
                if variable != (key == "unit"):
                    bad.append(f"{o.name}@{key}")

    visit("", obj)
    obj.visititems(visit)
    check(not bad, f"{where}: string attributes fixed-length (unit variable-length): {bad or 'all'}")


def same_dataset(a, b):
    return h5py.h5o.get_info(a.id).addr == h5py.h5o.get_info(b.id).addr


def layout(path, config_text, real):
    with h5py.File(path, "r") as f:
        check(list(f["h5md"].attrs["version"]) == [1, 1], "h5md version 1.1")
        check(text(f["h5md/creator"].attrs["name"]) == "pairmd" and "version" in f["h5md/creator"].attrs, "h5md/creator")
        check("name" in f["h5md/author"].attrs, "h5md/author")
        attr_strings_fixed(f, path)
        box = f["particles/all/box"]
        check(box.attrs["dimension"] == 3, "box dimension")
        check([text(b) for b in box.attrs["boundary"]] == ["periodic"] * 3, "box boundary")
        for q in ("position", "image", "velocity", "box/edges"):
            g = f["particles/all/" + q]
            check(g["step"].shape[0] == g["time"].shape[0] == g["value"].shape[0], q + ": step, time, value agree")
            check(g["value"].chunks is not None, q + " is chunked")
        pos = f["particles/all/position"]
        for q in ("image", "box/edges"):
            g = f["particles/all/" + q]
            check(same_dataset(g["step"], pos["step"]) and same_dataset(g["time"], pos["time"]),
                  q + ": step and time are hard links to position's")
        check(not same_dataset(f["particles/all/velocity/step"], pos["step"]), "velocity keeps its own step and time")
        edges = f["particles/all/box/edges/value"]
        check(edges.shape == (pos["value"].shape[0], 3), "cuboid box: edges [frames, 3] (a vector per frame)")
        posv = f["particles/all/position/value"]
        check(posv.dtype == np.float64 and posv.shape[1:] == (256, 3), "position float64 [frames, 256, 3]")
        check(f["particles/all/image/value"].dtype == np.int32, "image int32")
        check(f["particles/all/species"].dtype == np.int32 and f["particles/all/species"].shape == (256,), "species")
        check(f["particles/all/mass"].shape == (256,) and f["particles/all/charge"].shape == (256,), "mass, charge")
        for o in ("potential_energy", "kinetic_energy", "total_energy", "temperature", "pressure"):
            check(f["observables/" + o + "/value"].shape == f["observables/" + o + "/step"].shape, "observables/" + o)
        tot = f["observables/total_energy/value"][:]
        pe, ke = f["observables/potential_energy/value"][:], f["observables/kinetic_energy/value"][:]
        check(np.allclose(tot, pe + ke, rtol=1e-12, atol=0), "total = potential + kinetic")
        stored = text(f["parameters/config"][()])
        check(stored == config_text, "parameters/config is the YAML verbatim")
        if real:
            check(posv.attrs["unit"] == "Angstrom", "position unit Angstrom")
            check(f["particles/all/position/time"].attrs["unit"] == "fs", "time unit fs (LAMMPS real)")
            check(f["particles/all/velocity/value"].attrs["unit"] == "Angstrom fs-1", "velocity unit Angstrom fs-1")
            check(f["observables/temperature/value"].attrs["unit"] == "K", "temperature unit K")
            check(f["observables/pressure/value"].attrs["unit"] == "atm", "pressure unit atm")
        else:
            check("unit" not in posv.attrs, "reduced LJ values carry no unit")
            check(posv.compression == "gzip", "compression on request")


def mdanalysis(path, ckpt, real, dt):
    import MDAnalysis as mda
    import pairmd_mda
    with h5py.File(path, "r") as f:
        pos = f["particles/all/position/value"][:]
        img = f["particles/all/image/value"][:]
        steps = f["particles/all/position/step"][:]
        times = f["particles/all/position/time"][:]
        edges = f["particles/all/box/edges/value"][:]
        temperature = dict(zip(f["observables/temperature/step"][:], f["observables/temperature/value"][:]))
    # MDAnalysis as it is: positions, times and steps (real units are converted: time in ps).
    u = mda.Universe.empty(pos.shape[1], trajectory=True)
    u.load_new(path, format="H5MD", convert_units=real)
    check(len(u.trajectory) == len(steps), f"MDAnalysis {mda.__version__} sees {len(steps)} frames")
    vector_box = tuple(int(x) for x in mda.__version__.split(".")[:2]) >= (2, 5)
    for i, ts in enumerate(u.trajectory):
        # MDAnalysis keeps float32 coordinates: equal to the float64 values rounded.
        check(np.array_equal(ts.positions, pos[i].astype(np.float32)), f"frame {i}: positions")
        t = times[i] / 1000 if real else times[i]  # MDAnalysis keeps time in ps
        check(abs(ts.time - t) < 1e-9 * max(1.0, t) and ts.data["step"] == steps[i], f"frame {i}: time, step")
        check(abs(times[i] - steps[i] * dt) < 1e-12 * max(1.0, times[i]), f"frame {i}: time = step * dt")
        if vector_box:
            check(np.allclose(ts.dimensions[:3], edges[i], rtol=1e-6), f"frame {i}: box")
        else:
            # MDAnalysis reads a vector of edges from 2.5 on (its issue #4075); 2.4 gives no box.
            check(ts.dimensions is None, f"frame {i}: no box from MDAnalysis 2.4 (vector edges; pairmd_mda sets it)")
    with h5py.File(ckpt, "r") as c:
        check(c["state"].attrs["step"] == steps[-1], "checkpoint is at the last frame")
        check(np.array_equal(c["state/position"][:], pos[-1]), "last frame = engine state bit for bit")
        types = [text(x) for x in c["state"].attrs["type_names"]]
    # The helper: topology from the file, the box on every frame, positions unwrapped.
    h = pairmd_mda.universe(path)
    check(h.atoms.n_atoms == pos.shape[1] and set(h.atoms.types) <= set(types), "pairmd_mda: types")
    for i, ts in enumerate(h.trajectory):
        check(np.allclose(ts.dimensions[:3], edges[i], rtol=1e-6) and np.allclose(ts.dimensions[3:], 90),
              f"pairmd_mda frame {i}: box")
        unwrapped = (pos[i] + img[i] * edges[i]).astype(np.float32)
        check(np.allclose(ts.positions, unwrapped, rtol=0, atol=2e-5 * np.max(np.abs(unwrapped))),
              f"pairmd_mda frame {i}: positions unwrapped (position + image * L)")
        want = temperature.get(steps[i], np.nan)
        check(ts.data["step"] == steps[i] and np.isclose(ts.data["temperature"], want, equal_nan=True),
              f"pairmd_mda frame {i}: observables matched by step")


def maps(binary, work):
    import MDAnalysis as mda
    path, _, _ = run(binary, work, "maps", MAPS)
    with h5py.File(path, "r") as f:
        check("fields/potential_map/value" in f and f["fields/potential_map/value"].shape[0] == 3,
              "potential maps in /fields/potential_map (3 frames)")
        check("fields/potential_map_average" in f, "average map in /fields/potential_map_average")
        check(all(isinstance(g, h5py.Group) and "value" in g and g["value"].ndim == 1 for g in f["observables"].values()),
              "observables holds only scalar time series")
        n = f["particles/all/position/value"].shape[1]
    u = mda.Universe.empty(n, trajectory=True)
    u.load_new(path, format="H5MD", convert_units=False)
    check(len(u.trajectory) == 3 and all("temperature" in ts.data for ts in u.trajectory),
          "MDAnalysis opens a file with potential maps")


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    path, ck, text = run(binary, work, "lj", LJ)
    layout(path, text, real=False)
    mdanalysis(path, ck, real=False, dt=0.005)
    path, ck, text = run(binary, work, "real", REAL)
    layout(path, text, real=True)
    mdanalysis(path, ck, real=True, dt=2.0)
    maps(binary, work)
    print("all checks passed")


if __name__ == "__main__":
    main()
