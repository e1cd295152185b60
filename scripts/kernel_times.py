#!/usr/bin/env python3
"""Sum Nsight Compute's per-launch gpu__time_duration by kernel: total and per-step time.

usage: kernel_times.py NCU_RAW_CSV [STEPS]   (the CSV of `ncu --csv --page raw --metrics gpu__time_duration.sum`)
STEPS defaults to the number of integrate_kernel launches that did a step: a chunk of steps that
halted (a list rebuild was due) still launches its remaining kernels, which return at once; those
take a fraction of a real step's time and are counted as launches, not as steps.
"""
import csv
import sys
from collections import defaultdict


def main():
    path = sys.argv[1]
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]  # skip the program's own output
    rows = list(csv.reader(lines))
    head = rows[0]
    k_name, k_time = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    unit = rows[1][k_time] if len(rows) > 1 else ""
    total, calls = defaultdict(float), defaultdict(int)
    integrate = []
    for r in rows[2:]:
        try:
            t = float(r[k_time].replace(",", ""))
        except ValueError:
            continue
        name = r[k_name].replace("void ", "").replace("<unnamed>::", "").replace("(anonymous namespace)::", "")
        name = name.split("(")[0].split("<")[0].strip()
        total[name] += t
        calls[name] += 1
        if name.startswith("pairmd::integrate"):
            integrate.append(t)
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1.0)  # to microseconds
    integrate.sort()
    median = integrate[len(integrate) // 2] if integrate else 0.0
    real_steps = sum(1 for t in integrate if t > 0.25 * median)
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else max(1, real_steps)
    if len(integrate) > real_steps:
        print(f"{len(integrate) - real_steps} integrate launches returned at once (halted chunk steps)")
    grand = sum(total.values()) * scale
    print(f"{steps} steps")
    print(f"{'kernel':44s} {'calls':>6s} {'us/call':>9s} {'us/step':>9s} {'share':>6s}")
    for name, t in sorted(total.items(), key=lambda x: -x[1]):
        us = t * scale
        print(f"{name[:44]:44s} {calls[name]:6d} {us / calls[name]:9.1f} {us / steps:9.1f} {100 * us / grand:5.1f}%")
    print(f"{'all kernels':44s} {sum(calls.values()):6d} {'':9s} {grand / steps:9.1f}")


if __name__ == "__main__":
    main()
