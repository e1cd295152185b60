#!/usr/bin/env python3
"""Medians of bench/cpu_threads.sh's rows, as the Markdown table of docs/benchmarks.md.

usage: cpu_threads_summary.py RESULTS.csv

One row per condition, system and variant: the median steps/s and its range over the rounds,
the thread count the runs took, the median 1-minute load average before the runs, and the
median against the same condition's one-thread median (OMP_NUM_THREADS=1 for pairmd,
`-pk omp 1` for LAMMPS).
"""
import csv
import statistics
import sys
from collections import defaultdict

ORDER = ["old default", "OMP_NUM_THREADS=1", "new default", "lammps omp 1", "lammps omp 2", "lammps omp 2 passive"]


def main(path):
    groups = defaultdict(list)
    for row in csv.DictReader(open(path)):
        groups[(row["condition"], row["system"], row["variant"])].append(row)
    print("| condition | system | variant | threads | steps/s median (min-max, n) | load before | vs one thread |")
    print("|---|---|---|---:|---|---:|---:|")
    for cond in ("idle", "busy"):
        for system in ("lj", "sop"):
            medians = {}
            for variant in ORDER:
                rows = groups.get((cond, system, variant))
                if rows:
                    rates = [float(r["steps_per_s"]) for r in rows if r["steps_per_s"]]
                    medians[variant] = (statistics.median(rates), min(rates), max(rates), len(rates),
                                        statistics.median(float(r["load1"]) for r in rows),
                                        sorted({r["threads"] for r in rows}))
            for variant, (med, lo, hi, n, load, threads) in medians.items():
                base = medians.get("lammps omp 1" if variant.startswith("lammps") else "OMP_NUM_THREADS=1")
                ratio = f"{med / base[0]:.2f}" if base else ""
                print(f"| {cond} | {system} | {variant} | {'/'.join(threads)} | **{med:,.0f}** "
                      f"({lo:,.0f}-{hi:,.0f}, {n}) | {load:.1f} | {ratio} |")


if __name__ == "__main__":
    main(sys.argv[1])
