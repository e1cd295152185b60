#!/usr/bin/env python3
"""Ensembles on one GPU: aggregate particle-steps/s and timesteps/s of each copy against K.

usage: plot_ensembles.py OUT.png LABEL=ENSEMBLE_CSV [LABEL=ENSEMBLE_CSV ...]
Each CSV is what `ensemble_bench --csv` writes (scripts/device_run.sh ensembles:
ensemble_sop.csv, ensemble_lj4000.csv, ...); docs/img/ensembles_throughput.png is made from the
files in bench/results/ that docs/benchmarks.md ("Ensembles on one GPU") names.
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def read(path):
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            rows.append((int(r["copies"]), int(r["n"]), float(r["timesteps_per_s"]),
                         float(r["particle_steps_per_s"])))
    return sorted(rows)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    fig, (agg, each) = plt.subplots(1, 2, figsize=(11, 4.3))
    for i, spec in enumerate(sys.argv[2:]):
        label, path = spec.split("=", 1)
        rows = read(path)
        k = [r[0] for r in rows]
        agg.plot(k, [r[3] for r in rows], marker="o", color=f"C{i}", label=f"{label} (N = {rows[0][1]:,})")
        each.plot(k, [r[2] for r in rows], marker="o", color=f"C{i}", label=label)
    for ax in (agg, each):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("copies K in one ensemble")
        ax.grid(True, which="both", alpha=0.3)
    agg.set_ylabel("aggregate particle-steps per second")
    agg.set_title("all copies together")
    each.set_ylabel("timesteps per second of each copy")
    each.set_title("each copy")
    agg.legend(fontsize=8)
    fig.suptitle("pairmd ensembles on one H100 (ensemble_bench, median of 3 repeats)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    main()
