"""pairmd files in MDAnalysis: a Universe with topology, unwrapped coordinates and right units
and times, and a start file for pairmd from anything MDAnalysis reads (PDB, GRO, PSF/DCD, ...).

    import sys; sys.path.insert(0, "path/to/pairmd/python")
    import pairmd_mda
    u = pairmd_mda.universe("run.h5")        # or "run.gsd"
    u.atoms.types, u.atoms.charges, u.atoms.masses, u.bonds, u.atoms.fragments
    for ts in u.trajectory:                  # positions unwrapped (position + image * L)
        ts.time, ts.data["step"], ts.velocities, ts.data["temperature"]
    pairmd_mda.write_start(mda.Universe("protein.gro").atoms, "start.h5", type_names=[...])

What it adds to MDAnalysis's own readers (2.4, Debian's python3-mdanalysis; tested by
tests/python/test_mdanalysis_helper.py against the numbers of pairmd's Python module):

- Topology from the H5MD file itself: types (particles/all/species and its names), masses,
  charges, bonds (connectivity/bonds), angles, dihedrals and impropers (connectivity/angles,
  ...), one residue per molecule (bonded cluster). MDAnalysis 2.4
  has no H5MD topology reader. A GSD file carries its topology: MDAnalysis reads it directly
  (``mda.Universe("run.gsd")``) and this helper adds the rest.
- Unwrapped coordinates: position + image * L at every frame (MDAnalysis ignores H5MD's image
  and GSD's particles/image; an MSD from wrapped positions is wrong). ``unwrap=False`` keeps them
  wrapped. A GSD file's positions are in HOOMD's box, centred on the origin (pairmd's minus
  lo + L/2).
- The box: pairmd writes a cuboid box as the vector of its edges (H5MD), which MDAnalysis reads
  only from 2.5 on; the helper sets it on every frame.
- Velocities and forces matched by step, in MDAnalysis's units: MDAnalysis (up to 2.9, its issue
  #5051) converts ``Angstrom fs-1`` to Angstrom/ps by dividing by 1000 instead of multiplying, so
  real-units velocities come out 10^6 too small, and it reads velocity and force frames by the
  position frame's index. The helper reads them itself, at the position frame's step (NaN where
  that step has none), converted with lengths and times separately. From a GSD file (which
  MDAnalysis reads without velocities) it takes ``particles/velocity`` when the file has it.
- Times: MDAnalysis gives a GSD frame's index as its time; the helper gives ``log/time`` (the
  step times dt), in ps for real units as for H5MD.
- ``ts.data``: observables matched by step (MDAnalysis 2.4 indexes H5MD's by frame, which is
  wrong when observables_every differs from the position interval, and fails when it is larger;
  a frame without an observable at its step gets NaN); from a GSD file, its ``log/`` quantities.
- Units: ``units: real`` files are converted to MDAnalysis's units (Angstrom, ps; velocities
  Angstrom/ps, forces kJ/(mol Angstrom), energies as written: kcal/mol), ``units: lj`` values are
  left as they are (convert_units=False).

Needs h5py and MDAnalysis (Debian: python3-h5py, python3-mdanalysis); GSD files need the gsd
package (python3-gsd).
"""
import numpy as np

import h5py
import MDAnalysis as mda
from MDAnalysis import units as mda_units

__all__ = ["universe", "write_start"]

# MDAnalysis's own units, into which real-units values are converted.
_MDA_LENGTH, _MDA_TIME, _MDA_FORCE = "Angstrom", "ps", "kJ/(mol*Angstrom)"


def _hiding(cls, names):
    """A subclass of an h5py File or Group class that hides `names` from MDAnalysis's H5MD reader
    (``name in group``): observables (indexed by position frame there, matched by step here), and
    velocities and forces (read here, by step and in the right units)."""

    class Hidden(cls):
        def __contains__(self, name):
            return name not in names and super().__contains__(name)

    return Hidden


def _reader_class():
    from MDAnalysis.coordinates.H5MD import H5MDReader

    class Reader(H5MDReader):
        def open_trajectory(self):
            super().open_trajectory()
            self._file.__class__ = _hiding(type(self._file), {"observables"})
            self._particle_group.__class__ = _hiding(type(self._particle_group), {"velocity", "force"})

    return Reader


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _h5md_factor(dataset, kind):
    """The factor that takes the values of `dataset` (its H5MD ``unit`` attribute) to MDAnalysis's
    unit for `kind` ("velocity" or "force"); 1 without a unit (reduced units). Velocities are
    converted through their length and time units, which MDAnalysis converts right."""
    if "unit" not in dataset.attrs:
        return 1.0
    from MDAnalysis.coordinates.H5MD import H5MDReader

    unit = H5MDReader._unit_translation[kind][_text(dataset.attrs["unit"])]
    if kind == "force":
        return mda_units.get_conversion_factor("force", unit, _MDA_FORCE)
    length, time = unit.split("/")
    return (mda_units.get_conversion_factor("length", length, _MDA_LENGTH) /
            mda_units.get_conversion_factor("time", time, _MDA_TIME))


def _molecules(n, bonds):
    """Residue index per particle: one residue per bonded cluster (union-find), in order of
    their first particle."""
    parent = np.arange(n)

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in bonds:
        a, b = find(int(i)), find(int(j))
        if a != b:
            parent[max(a, b)] = min(a, b)
    roots = np.array([find(i) for i in range(n)])
    _, index = np.unique(roots, return_inverse=True)
    return index


class _ByStep:
    """A per-particle quantity stored with its own steps (H5MD velocity or force): the values at
    a step, times `factor`, or NaN where the step has none."""

    def __init__(self, group, factor):
        self.steps, self.values, self.factor = group["step"][()], group["value"], factor

    def at(self, step):
        k = np.searchsorted(self.steps, step)
        if k < len(self.steps) and self.steps[k] == step:
            return self.values[k] * self.factor
        return np.full(self.values.shape[1:], np.nan)


class _Frames:
    """What the helper sets on every frame, as one MDAnalysis transformation: the box, positions
    unwrapped with the images, velocities and forces, the time, and ts.data by step. Each part
    is a function of the frame index (None: not set)."""

    def __init__(self, unwrap, edges, images=None, step=None, time=None, velocities=None, forces=None,
                 observables=None):
        self.unwrap, self.edges, self.images, self.step, self.time = unwrap, edges, images, step, time
        self.velocities, self.forces, self.observables = velocities, forces, observables or {}

    def __call__(self, ts):
        f = ts.frame
        e = np.asarray(self.edges(f), dtype=np.float64)
        L = np.diag(e) if e.ndim == 2 else e
        ts.dimensions = np.array([L[0], L[1], L[2], 90.0, 90.0, 90.0], dtype=np.float32)
        if self.unwrap and self.images is not None:
            img = self.images(f)
            if img is not None:
                ts.positions = (ts.positions.astype(np.float64) + img * L).astype(np.float32)
        if self.time is not None:
            ts.time = self.time(f)
        for name, get in (("velocities", self.velocities), ("forces", self.forces)):
            values = get(f) if get is not None else None
            if values is not None:
                setattr(ts, name, values)
        if self.step is not None:
            step = int(self.step(f))
            ts.data["step"] = step
            for name, (obs_steps, values) in self.observables.items():
                k = np.searchsorted(obs_steps, step)
                ts.data[name] = values[k] if k < len(obs_steps) and obs_steps[k] == step else np.nan
        return ts


def _h5md_universe(path, unwrap):
    f = h5py.File(path, "r")
    part = f["particles/all"] if "all" in f["particles"] else f["particles"][list(f["particles"])[0]]
    n = part["position/value"].shape[1]
    units = _text(f["parameters/units"][()]) if "parameters/units" in f else "lj"
    real = units == "real"

    species = part["species"][()] if "species" in part else np.zeros(n, dtype=np.int32)
    names = [_text(x) for x in part["species"].attrs["names"]] if "species" in part and "names" in part[
        "species"].attrs else [str(t) for t in range(int(species.max()) + 1)]
    bonds = f["connectivity/bonds"][()] if "connectivity/bonds" in f else np.zeros((0, 2), dtype=np.int32)
    resindex = _molecules(n, bonds)
    u = mda.Universe.empty(n, n_residues=int(resindex.max()) + 1, atom_resindex=resindex, trajectory=True)
    u.add_TopologyAttr("types", np.array([names[t] for t in species], dtype=object))
    u.add_TopologyAttr("names", np.array([names[t] for t in species], dtype=object))
    u.add_TopologyAttr("masses", part["mass"][()] if "mass" in part else np.ones(n))
    u.add_TopologyAttr("charges", part["charge"][()] if "charge" in part else np.zeros(n))
    u.add_TopologyAttr("resids", np.arange(1, u.residues.n_residues + 1))
    if len(bonds):
        u.add_TopologyAttr("bonds", [tuple(map(int, b)) for b in bonds])
    for kind in ("angles", "dihedrals", "impropers"):  # connectivity/angles [m, 3], the others [m, 4]
        if "connectivity/" + kind in f and len(f["connectivity/" + kind]):
            u.add_TopologyAttr(kind, [tuple(map(int, t)) for t in f["connectivity/" + kind][()]])

    # MDAnalysis's reader gives positions and times; real units are converted to its own (time
    # in ps), reduced ones are left alone. Velocities and forces are read below.
    u.trajectory = _reader_class()(path, convert_units=real)
    edges = part["box/edges/value"]
    images = part["image/value"] if "image" in part else None
    steps = part["position/step"][()]
    observables = {}
    if "observables" in f:
        for name, g in f["observables"].items():
            if isinstance(g, h5py.Group) and "step" in g and "value" in g and g["value"].ndim == 1:
                observables[name] = (g["step"][()], g["value"][()])
    by_step = {kind: _ByStep(part[kind], _h5md_factor(part[kind]["value"], kind) if real else 1.0)
               for kind in ("velocity", "force") if kind in part}
    u.trajectory.add_transformations(_Frames(
        unwrap, lambda k: edges[k],
        images=(lambda k: images[k]) if images is not None else None,
        step=lambda k: steps[k],
        velocities=(lambda k: by_step["velocity"].at(steps[k])) if "velocity" in by_step else None,
        forces=(lambda k: by_step["force"].at(steps[k])) if "force" in by_step else None,
        observables=observables))
    u._pairmd_files = (f,)  # keep the file open as long as the Universe
    return u


def _gsd_universe(path, unwrap):
    import gsd.hoomd

    u = mda.Universe(path)
    try:
        t = gsd.hoomd.open(path, "r")  # gsd >= 3
    except ValueError:
        t = gsd.hoomd.open(path, "rb")  # gsd 2.x (Debian 12)
    log0 = t[0].log
    units = bytes(log0["pairmd/units"]).decode() if "pairmd/units" in log0 else "lj"
    # Real units: GSD holds Angstrom, fs and Angstrom/fs (the run's units; GSD has none).
    time_factor = mda_units.get_conversion_factor("time", "fs", _MDA_TIME) if units == "real" else 1.0
    speed_factor = 1.0 / time_factor
    names = [k for k in log0 if not k.startswith("pairmd/") and k != "time" and np.size(log0[k]) == 1]

    def velocities(k):
        # A frame without its own chunk would get frame 0's (the schema's default): NaN instead.
        if not t.file.chunk_exists(frame=k, name="particles/velocity"):
            return np.full((len(u.atoms), 3), np.nan)
        return t[k].particles.velocity.astype(np.float64) * speed_factor

    has_velocities = any(t.file.chunk_exists(frame=k, name="particles/velocity") for k in range(len(t)))
    frames = _Frames(unwrap, lambda k: t[k].configuration.box[:3],
                     images=lambda k: t[k].particles.image,
                     time=(lambda k: float(t[k].log["time"][0]) * time_factor) if "time" in log0 else None,
                     velocities=velocities if has_velocities else None)

    def transform(ts):
        frames(ts)
        log = t[ts.frame].log
        for name in names:
            ts.data[name] = float(log[name][0]) if name in log else np.nan
        return ts

    u.trajectory.add_transformations(transform)
    u._pairmd_files = (t,)
    return u


def universe(path, unwrap=True):
    """An MDAnalysis Universe of a pairmd trajectory (.h5 H5MD or .gsd) with types, masses,
    charges, bonds, one residue per molecule, the box on every frame, positions unwrapped with
    the stored images (``unwrap=False``: as stored, wrapped into the box), velocities and forces
    where the file has them, and times and observables by step; real units in MDAnalysis's."""
    path = str(path)
    if path.endswith(".gsd"):
        return _gsd_universe(path, unwrap)
    return _h5md_universe(path, unwrap)


def write_start(atoms, path, type_names=None, units="real", box=None):
    """Writes an MDAnalysis AtomGroup as an H5MD start file for pairmd (``system.file``):
    positions, box, species with their names, masses, charges, bonds, and velocities if the
    trajectory has them. This is the route from PDB, GRO and every other format MDAnalysis reads.

    type_names: the order of ``system.types`` in the config (pairmd matches the file's types to
    it by order); default: the atoms' types in order of first appearance.
    units: "real" writes Angstrom (MDAnalysis's length unit; velocities in Angstrom/ps, which
    pairmd converts to Angstrom/fs); "lj" writes the numbers as they are, without units.
    box: [Lx, Ly, Lz] for atoms whose universe has no (or a non-orthorhombic) box; without any,
    the box is the atoms' bounding box and its boundary "none" (for `system.boundary: open`).
    """
    types = [str(t) for t in atoms.types]
    if type_names is None:
        type_names = list(dict.fromkeys(types))
    index = {name: k for k, name in enumerate(type_names)}
    missing = sorted(set(types) - set(index))
    if missing:
        raise ValueError(f"types {missing} are not in type_names {type_names}")
    pos = atoms.positions.astype(np.float64)
    dims = atoms.dimensions
    periodic = True
    if box is not None:
        L = np.asarray(box, dtype=np.float64)
    elif dims is not None and np.all(dims[:3] > 0):
        if not np.allclose(dims[3:], 90.0):
            raise ValueError(f"the box {dims} is not orthorhombic; pairmd needs an orthorhombic box (pass box=)")
        L = dims[:3].astype(np.float64)
    else:
        lo, hi = pos.min(axis=0), pos.max(axis=0)
        L = np.maximum(hi - lo, 1e-3) + 1.0
        periodic = False
    real = units == "real"
    n = len(atoms)
    with h5py.File(path, "w-") as f:
        h = f.create_group("h5md")
        h.attrs["version"] = np.array([1, 1], dtype=np.int32)
        h.create_group("author").attrs["name"] = np.bytes_("pairmd_mda.write_start")
        c = h.create_group("creator")
        c.attrs["name"], c.attrs["version"] = np.bytes_("MDAnalysis"), np.bytes_(mda.__version__)
        p = f.create_group("particles/all")
        b = p.create_group("box")
        b.attrs["dimension"] = np.int32(3)
        b.attrs["boundary"] = np.array([b"periodic" if periodic else b"none"] * 3)
        for name, value in (("position", pos), ("box/edges", L)):
            g = p.create_group(name)
            g["step"] = np.array([0], dtype=np.int64)
            g["time"] = np.array([0.0])
            g["value"] = value[np.newaxis]
            if real:
                g["value"].attrs["unit"] = "Angstrom"
        if atoms.universe.trajectory.ts.has_velocities:
            g = p.create_group("velocity")
            g["step"], g["time"] = np.array([0], dtype=np.int64), np.array([0.0])
            g["value"] = atoms.velocities.astype(np.float64)[np.newaxis]
            if real:
                g["value"].attrs["unit"] = "Angstrom ps-1"
        p["species"] = np.array([index[t] for t in types], dtype=np.int32)
        p["species"].attrs["names"] = np.array([name.encode() for name in type_names])
        p["mass"] = atoms.masses.astype(np.float64) if hasattr(atoms, "masses") else np.ones(n)
        try:
            p["charge"] = atoms.charges.astype(np.float64)
        except (AttributeError, mda.exceptions.NoDataError):
            p["charge"] = np.zeros(n)
        try:
            bonds = atoms.bonds
        except (AttributeError, mda.exceptions.NoDataError):
            bonds = []
        if len(bonds):
            local = {ix: k for k, ix in enumerate(atoms.ix)}
            pairs = [(local[b[0].ix], local[b[1].ix]) for b in bonds if b[0].ix in local and b[1].ix in local]
            f["connectivity/bonds"] = np.array(pairs, dtype=np.int32).reshape(-1, 2)
            f["connectivity/bond_type"] = np.zeros(len(pairs), dtype=np.int32)
        f["parameters/units"] = np.bytes_(units)
    return type_names
