#!/usr/bin/env python3
"""Medians of bench/cpu_threads.sh's rows, as the Markdown table of docs/benchmarks.md.

usage: cpu_threads_summary.py RESULTS.csv
       cpu_threads_summary.py --crossover CROSSOVER.csv   (bench/cpu_threads_crossover.sh's rows)

One row per condition, system and variant: the median steps/s and its range over the rounds,
the thread count the runs took, the median 1-minute load average before the runs, and against
one thread (OMP_NUM_THREADS=1 for pairmd, `-pk omp 1` for LAMMPS) in the same condition: the
ratio of the medians, and the median of each round's own ratio (the runs of a round are
minutes apart; the load of a shared machine drifts over the rounds).
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
    print("| condition | system | variant | threads | steps/s median (min-max, n) | load before "
          "| vs one thread: medians | per round (min-max) |")
    print("|---|---|---|---:|---|---:|---:|---:|")
    for cond in ("idle", "busy"):
        for system in ("lj", "sop"):
            medians = {}
            for variant in ORDER:
                rows = groups.get((cond, system, variant))
                if rows:
                    rates = [float(r["steps_per_s"]) for r in rows if r["steps_per_s"]]
                    medians[variant] = (statistics.median(rates), min(rates), max(rates), len(rates),
                                        statistics.median(float(r["load1"]) for r in rows),
                                        sorted({r["threads"] for r in rows}),
                                        {r["round"]: float(r["steps_per_s"]) for r in rows if r["steps_per_s"]})
            for variant, (med, lo, hi, n, load, threads, by_round) in medians.items():
                base = medians.get("lammps omp 1" if variant.startswith("lammps") else "OMP_NUM_THREADS=1")
                ratio = f"{med / base[0]:.2f}" if base else ""
                paired = [by_round[k] / base[6][k] for k in by_round if base and k in base[6]]
                per_round = (f"{statistics.median(paired):.2f} ({min(paired):.2f}-{max(paired):.2f})"
                             if paired else "")
                print(f"| {cond} | {system} | {variant} | {'/'.join(threads)} | **{med:,.0f}** "
                      f"({lo:,.0f}-{hi:,.0f}, {n}) | {load:.1f} | {ratio} | {per_round} |")


def crossover(path):
    """Two passive threads against one at each size: medians and each round's own ratio."""
    runs = defaultdict(dict)
    for r in csv.DictReader(open(path)):
        if r["steps_per_s"]:
            runs[(r["condition"], int(r["particles"]), r["round"])][r["threads"]] = float(r["steps_per_s"])
    rates, ratios = defaultdict(lambda: defaultdict(list)), defaultdict(list)
    for (cond, n, _), by_threads in runs.items():
        for t, x in by_threads.items():
            rates[(cond, n)][t].append(x)
        if "1" in by_threads and "2" in by_threads:
            ratios[(cond, n)].append(by_threads["2"] / by_threads["1"])
    print("| condition | particles | 1 thread, steps/s median | 2 threads (passive), median "
          "| 2 against 1 per round: median (min-max, n) |")
    print("|---|---:|---:|---:|---|")
    for cond, n in sorted(ratios, key=lambda k: (k[0] != "idle", k[1])):
        r = ratios[(cond, n)]
        print(f"| {cond} | {n:,} | {statistics.median(rates[(cond, n)]['1']):,.0f} "
              f"| {statistics.median(rates[(cond, n)]['2']):,.0f} "
              f"| {statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f}, {len(r)}) |")


if __name__ == "__main__":
    if sys.argv[1] == "--crossover":
        crossover(sys.argv[2])
    else:
        main(sys.argv[1])
