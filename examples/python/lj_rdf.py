"""Run a Lennard-Jones liquid from Python, compute its radial distribution function with
MDAnalysis from memory (no trajectory file), and plot it with matplotlib (docs/python.md).

    PYTHONPATH=build/python python3 examples/python/lj_rdf.py            # 2048 particles
    PYTHONPATH=build/python python3 examples/python/lj_rdf.py --cells 5 --steps 500 --frames 10
"""
import argparse

import matplotlib

matplotlib.use("Agg")  # a PNG, also without a display
import matplotlib.pyplot as plt
import MDAnalysis as mda
import numpy as np
from MDAnalysis.analysis.rdf import InterRDF
from MDAnalysis.coordinates.memory import MemoryReader

import pairmd

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--cells", type=int, default=8, help="fcc cells per edge (4 * cells^3 particles)")
parser.add_argument("--steps", type=int, default=5000, help="equilibration steps")
parser.add_argument("--frames", type=int, default=50, help="frames for the RDF")
parser.add_argument("--every", type=int, default=50, help="steps between frames")
parser.add_argument("--backend", default="auto", help="cpu, cuda or auto")
parser.add_argument("--out", default="lj_rdf.png", help="the plot")
args = parser.parse_args()

# The config as a dict: the keys of docs/config.md (configs/lj_liquid.yaml, smaller).
config = {
    "units": "lj",
    "system": {"types": [{"name": "A", "mass": 1.0}],
               "lattice": {"kind": "fcc", "cells": args.cells, "density": 0.8442}},
    "force_field": {"pair": [{"potential": "lj", "cutoff": 2.5,
                              "coeffs": [{"types": ["A", "A"], "epsilon": 1.0, "sigma": 1.0}]}]},
    "integrator": {"kind": "langevin", "dt": 0.005, "temperature": 1.2, "friction": 1.0, "seed": 2026},
    "output": {"thermo_every": 500},
}

# output=None: no files; the thermo table still prints (quiet=True would silence it).
with pairmd.Simulation(config, backend=args.backend, output=None) as sim:
    sim.run(args.steps)  # melt the lattice and equilibrate

    # Collect frames in memory: the callback sees the simulation every `every` steps.
    frames = []
    sim.run(args.frames * args.every, callback=lambda s: frames.append(s.positions), every=args.every)
    dimensions = sim.dimensions  # [Lx, Ly, Lz, 90, 90, 90]
    thermo = sim.thermo_table    # pandas.DataFrame(thermo) makes a table of it
    n = len(sim)

print(f"{n} particles, {len(frames)} frames, mean T over the run {np.mean(thermo['temperature'][1:]):.3f}")

# An MDAnalysis Universe with no file behind it: the frames go in through a MemoryReader.
u = mda.Universe.empty(n, trajectory=False)
u.load_new(np.array(frames, dtype=np.float32), format=MemoryReader, order="fac",
           dimensions=np.tile(dimensions, (len(frames), 1)))
rdf = InterRDF(u.atoms, u.atoms, nbins=150, range=(0.5, min(dimensions[:3]) / 2), exclusion_block=(1, 1))
rdf.run()

r, g = rdf.results.bins, rdf.results.rdf
peak = int(np.argmax(g))
print(f"first peak {r[peak]:.3f} {g[peak]:.3f}  (r in sigma, g(r))")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(r, g)
ax.axhline(1.0, color="grey", lw=0.5)
ax.set_xlabel(r"$r$ [$\sigma$]")
ax.set_ylabel(r"$g(r)$")
ax.set_title(rf"LJ liquid, $\rho$ = 0.8442, $kT$ = 1.2 ({n} particles)")
fig.tight_layout()
fig.savefig(args.out, dpi=120)
print(f"wrote {args.out}")
