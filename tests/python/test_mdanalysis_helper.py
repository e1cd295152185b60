"""python/pairmd_mda.py against pairmd's own numbers (docs/output.md, "Opening a trajectory").

A run of the Python module records, at every frame step, what the engine holds: unwrapped
positions, velocities, forces, time and thermo. The same run writes H5MD and GSD files, and the
helper's Universe of each must give those numbers back, in MDAnalysis's units for real units
(Angstrom, ps, Angstrom/ps, kJ/(mol Angstrom)) and as they are for lj units. The plain MDAnalysis
readers are checked for what docs/output.md says they do (velocities 10^6 too small in real units
while MDAnalysis has its issue #5051; GSD times that are frame numbers).

Run by ctest (python.mdanalysis_helper) with Debian's python3 and the module of the build tree.
"""
import os
import sys
import warnings

import numpy as np
import pytest

import pairmd

mda = pytest.importorskip("MDAnalysis")
pytest.importorskip("h5py")
pytest.importorskip("gsd.hoomd")
warnings.filterwarnings("ignore", category=DeprecationWarning)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import pairmd_mda  # noqa: E402

KCAL_TO_KJ = 4.184  # MDAnalysis's forces are kJ/(mol Angstrom)

REAL = {
    "units": "real", "steps": 40,
    "system": {"types": [{"name": "Ar", "mass": 39.948}],
               "lattice": {"kind": "fcc", "cells": 4, "density": 0.021}},
    "force_field": {"pair": [{"potential": "lj", "cutoff": 8.5,
                              "coeffs": [{"types": ["Ar", "Ar"], "epsilon": 0.238, "sigma": 3.405}]}]},
    "integrator": {"kind": "langevin", "dt": 2.0, "temperature": 120, "friction": 0.005, "seed": 5},
}
LJ = {
    "units": "lj", "steps": 40,
    "system": {"types": [{"name": "A", "mass": 1.0}], "lattice": {"kind": "fcc", "cells": 4, "density": 0.8442}},
    "force_field": {"pair": [{"potential": "lj", "cutoff": 2.5,
                              "coeffs": [{"types": ["A", "A"], "epsilon": 1.0, "sigma": 1.0}]}]},
    "integrator": {"kind": "langevin", "dt": 0.005, "temperature": 1.2, "friction": 1.0, "seed": 3},
}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def record_run(base, prefix, every=10, velocities_every=10, forces_every=10):
    """Runs `base` with H5MD and GSD output; returns what the engine held at each multiple of
    `every`: step -> dict of unwrapped positions, velocities, forces, time and thermo."""
    cfg = dict(base)
    cfg["output"] = {"prefix": prefix, "thermo_every": every,
                     "trajectory": {"every": every, "velocities_every": velocities_every,
                                    "forces_every": forces_every, "observables_every": every},
                     "gsd": {"every": every, "velocities": True}}
    seen = {}

    def record(s):
        seen[s.step] = {"positions": s.positions + s.images * s.box["lengths"],
                        "centre": s.box["lo"] + s.box["lengths"] / 2, "velocities": s.velocities,
                        "forces": s.forces, "time": s.time, "thermo": s.thermo}

    with pairmd.Simulation(cfg, backend="cpu", quiet=True) as sim:
        record(sim)
        sim.run(cfg["steps"], callback=record, every=every)
    return seen


def close(a, b, rel):
    """float32 (MDAnalysis keeps float32 arrays) against float64."""
    return np.allclose(a, b, rtol=rel, atol=rel * np.max(np.abs(b)))


# Real units: MDAnalysis's (Angstrom, ps); lj: as they are.
@pytest.mark.parametrize("base, speed, force, time", [(REAL, 1000.0, KCAL_TO_KJ, 1e-3), (LJ, 1.0, 1.0, 1.0)],
                         ids=["real", "lj"])
@pytest.mark.parametrize("ext", ["h5", "gsd"])
def test_helper_gives_pairmds_numbers(base, speed, force, time, ext):
    seen = record_run(base, "run")
    u = pairmd_mda.universe("run." + ext)
    assert len(u.trajectory) == len(seen) == 5
    for ts in u.trajectory:
        step = int(ts.data["step"])
        want = seen[step]
        assert ts.time == pytest.approx(want["time"] * time, rel=1e-12)
        # Unwrapped; GSD's box is HOOMD's, centred on the origin.
        assert close(ts.positions, want["positions"] - (want["centre"] if ext == "gsd" else 0), 1e-6)
        assert ts.has_velocities
        assert close(ts.velocities, want["velocities"] * speed, 1e-6)
        if ext == "h5":  # GSD stores no forces
            assert close(ts.forces, want["forces"] * force, 1e-6)
        for name in ("temperature", "potential_energy", "kinetic_energy", "pressure"):
            assert ts.data[name] == pytest.approx(want["thermo"][name], rel=1e-12)
    # MDAnalysis's own view of the units.
    if base is REAL and ext == "h5":
        assert u.trajectory.units["time"] == "fs" and u.trajectory.units["length"] == "Angstrom"


def test_velocities_and_forces_at_their_own_steps():
    # Velocities every 20 steps and forces every 40, positions every 10: each frame gets the
    # values of its own step, NaN where that step has none (MDAnalysis's reader takes them by
    # frame index: the values of other steps).
    seen = record_run(REAL, "gaps", every=10, velocities_every=20, forces_every=40)
    u = pairmd_mda.universe("gaps.h5")
    got = {int(ts.data["step"]): (ts.velocities.copy(), ts.forces.copy()) for ts in u.trajectory}
    assert sorted(got) == [0, 10, 20, 30, 40]
    for step, (v, f) in got.items():
        if step % 20 == 0:
            assert close(v, seen[step]["velocities"] * 1000.0, 1e-6)
        else:
            assert np.all(np.isnan(v))
        if step % 40 == 0:
            assert close(f, seen[step]["forces"] * KCAL_TO_KJ, 1e-6)
        else:
            assert np.all(np.isnan(f))


def speed_conversion_is_inverted():
    """MDAnalysis's issue #5051 (fixed after 2.9): Angstrom/fs -> Angstrom/ps gives 1e-3."""
    return mda.units.convert(1.0, "Angstrom/fs", "Angstrom/ps") < 1.0


def test_plain_readers_do_what_the_docs_say():
    seen = record_run(REAL, "plain")
    n = len(seen[0]["positions"])
    # H5MD, real units: velocities off by 10^6 while MDAnalysis has the bug; with
    # convert_units=False they are pairmd's Angstrom/fs and the times its fs (docs/output.md).
    u = mda.Universe.empty(n, trajectory=True)
    u.load_new("plain.h5", format="H5MD")
    raw = mda.Universe.empty(n, trajectory=True)
    raw.load_new("plain.h5", format="H5MD", convert_units=False)
    for ts, ts_raw in zip(u.trajectory, raw.trajectory):
        want = seen[int(ts.data["step"])]
        factor = 1e-3 if speed_conversion_is_inverted() else 1e3
        assert close(ts.velocities, want["velocities"] * factor, 1e-6)
        assert close(ts_raw.velocities, want["velocities"], 1e-6)
        assert ts_raw.time == pytest.approx(want["time"])
        assert ts.time == pytest.approx(want["time"] / 1000)
    # GSD: the time is the frame's index; the step is in ts.data (times dt is the time).
    g = mda.Universe("plain.gsd")
    warnings.filterwarnings("ignore", message="Reader has no dt information")
    for ts in g.trajectory:
        assert ts.time == ts.frame
        assert ts.data["step"] * REAL["integrator"]["dt"] == pytest.approx(seen[int(ts.data["step"])]["time"])
