#!/usr/bin/env python3
"""Timesteps/s against N for every pairmd strategy and for OpenMM, from one GPU job.

usage: plot_vs_openmm.py PAIRMD_COMPARE_CSV OPENMM_CSV OUT.png
(scripts/device_run.sh openmm writes both CSVs; docs/img/vs_openmm.png is made from
bench/results/vs_openmm_h100_2026-11-25_pairmd.csv and
bench/results/vs_openmm_h100_2026-11-25_openmm.csv).
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def read(path, key):
    series = defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            series[r[key]].append((int(r["n"]), float(r["timesteps_per_s"])))
    return {k: sorted(v) for k, v in series.items()}


def main():
    pairmd = read(sys.argv[1], "strategy")
    openmm = read(sys.argv[2], "precision")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, pts in pairmd.items():
        style = dict(lw=2.8, color="C3", zorder=5) if name == "pair_slots_fused" else dict(lw=1.2)
        ax.plot(*zip(*pts), marker="o", label=f"pairmd {name}" + (" (default)" if name == "pair_slots_fused" else ""), **style)
    for name, pts in openmm.items():
        ax.plot(*zip(*pts), marker="s", ls="--", color="k" if name == "mixed" else "0.5", label=f"OpenMM 8.6.1 ({name})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("particles N (LJ liquid, rho 0.8442, rc 2.5)")
    ax.set_ylabel("timesteps per second")
    ax.set_title("pairmd and OpenMM on one H100, same job")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[3], dpi=110)


if __name__ == "__main__":
    main()
