#!/usr/bin/python3
"""Plot a pairmd run's energies per particle, temperature and pressure, each on its own axis.

usage: /usr/bin/python3 examples/plot_energies.py RUN.h5|RUN.gsd [OUT.png]

Reads observables/*/{step,time,value} of an H5MD trajectory, or the log/ chunks of a GSD
trajectory (output.gsd). One row per quantity: potential, kinetic and total energy per particle,
temperature and pressure, each on its own axis. The left column shows the whole run (how it
started: a lattice melting, a relaxation); the right column the second half on an axis of its own
scaled to its fluctuations, with its mean (dashed), mean +- standard deviation and the drift
(slope of a straight-line fit) in the title, so that settling, fluctuations and drift can be read
at a glance.
Units come from the file (real units: kcal/mol, fs, K, atm; lj: epsilon, tau, epsilon/k_B,
epsilon/sigma^3). Needs h5py (or gsd for .gsd files), numpy and matplotlib (Debian:
python3-h5py, python3-gsd, python3-numpy, python3-matplotlib).
"""
import os
import sys

import numpy as np
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

QUANTITIES = (  # name, label, per particle
    ("potential_energy", "potential energy", True),
    ("kinetic_energy", "kinetic energy", True),
    ("total_energy", "total energy", True),
    ("temperature", "temperature", False),
    ("pressure", "pressure", False),
)
REDUCED = {"energy": "epsilon", "time": "tau", "temperature": "epsilon/k_B", "pressure": "epsilon/sigma^3"}
REAL = {"energy": "kcal/mol", "time": "fs", "temperature": "K", "pressure": "atm"}


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def read_h5md(path):
    import h5py

    with h5py.File(path, "r") as f:
        if "observables" not in f:
            sys.exit(f"{path}: no observables group (was output.trajectory set?)")
        units = text(f["parameters/units"][()]) if "parameters/units" in f else "lj"
        title = text(f["parameters/config_path"][()]) if "parameters/config_path" in f else path
        n = f["particles/all/species"].shape[0]
        data = {}
        for name, _, _ in QUANTITIES:
            g = f["observables/" + name]
            data[name] = (g["time"][:], g["value"][:])
    return data, n, units, title


def read_gsd(path):
    import gsd.hoomd

    try:
        t = gsd.hoomd.open(path, "r")
    except ValueError:
        t = gsd.hoomd.open(path, "rb")  # gsd 2.x
    frames = list(t)
    if not frames or "time" not in frames[0].log:
        sys.exit(f"{path}: no log/ chunks (not written by pairmd's output.gsd?)")
    units = bytes(frames[0].log.get("pairmd/units", np.frombuffer(b"lj", dtype=np.uint8))).decode()
    time = np.array([fr.log["time"][0] for fr in frames])
    data = {name: (time, np.array([fr.log[name][0] for fr in frames])) for name, _, _ in QUANTITIES}
    return data, frames[0].particles.N, units, path


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else path.rsplit(".", 1)[0] + "_energies.png"
    data, n, units, title = read_gsd(path) if path.endswith(".gsd") else read_h5md(path)
    u = REAL if units == "real" else REDUCED
    # Left: the whole run (the start, e.g. a lattice melting); right: its second half, on an axis
    # of its own, where the fluctuations and any drift show.
    fig, axes = plt.subplots(len(QUANTITIES), 2, sharex="col", figsize=(11, 9.5),
                             gridspec_kw={"width_ratios": [1, 1.25]})
    colors = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
    for row, ((name, label, per_particle), color) in enumerate(zip(QUANTITIES, colors)):
        t, v = data[name]
        if per_particle:
            v = v / n
        unit = u["energy"] + " per particle" if per_particle else u[name]
        whole, late = axes[row]
        whole.plot(t, v, color=color, lw=1.0)
        whole.set_ylabel(f"{label}\n[{unit}]", fontsize=8)
        k = len(v) // 2
        tl, vl = t[k:], v[k:]
        late.plot(tl, vl, color=color, lw=1.0)
        finite = vl[np.isfinite(vl)]
        if len(finite):
            mean, sd = finite.mean(), finite.std()
            late.axhline(mean, color="k", ls="--", lw=0.8)
            slope = np.polyfit(tl[np.isfinite(vl)], finite, 1)[0] if len(finite) > 2 else 0.0
            late.set_title(f"{label}: {mean:.5g} ± {sd:.2g} {unit}; drift {slope:.2g} per {u['time']}",
                           fontsize=8, loc="left")
        for ax in (whole, late):
            ax.ticklabel_format(axis="y", useOffset=False)
            ax.tick_params(labelsize=8)
            ax.grid(alpha=0.3)
    axes[0][0].set_title("whole run", fontsize=9)
    axes[-1][0].set_xlabel(f"time [{u['time']}]")
    axes[-1][1].set_xlabel(f"time [{u['time']}] (second half: mean ± standard deviation, drift)")
    fig.suptitle(f"{os.path.basename(title)}: {n} particles, {units} units")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
