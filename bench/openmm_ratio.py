#!/usr/bin/env python3
"""pairmd against OpenMM, measured in the same GPU job: timesteps/s per N and their ratio.

usage: openmm_ratio.py PAIRMD_COMPARE_CSV OPENMM_CSV
(the CSVs of `pairmd compare --out PREFIX` and of bench/openmm_lj.py --csv).
"""
import csv
import sys
from collections import defaultdict


def main():
    pairmd, openmm = defaultdict(dict), defaultdict(dict)
    with open(sys.argv[1], newline="") as f:
        for r in csv.DictReader(f):
            if float(r["timesteps_per_s"]) > 0:
                pairmd[int(r["n"])][r["strategy"]] = float(r["timesteps_per_s"])
    with open(sys.argv[2], newline="") as f:
        for r in csv.DictReader(f):
            openmm[int(r["n"])][r["precision"]] = float(r["timesteps_per_s"])
    print(f"{'N':>9s} {'default':>9s} {'best':>9s} {'strategy':>17s} {'OpenMM mix':>10s} {'OpenMM sgl':>10s} "
          f"{'default/mix':>11s} {'best/mix':>9s}")
    for n in sorted(set(pairmd) & set(openmm)):
        p, o = pairmd[n], openmm[n]
        default = p.get("pair_slots_fused", 0.0)
        best_name = max(p, key=p.get)
        mix, sgl = o.get("mixed", 0.0), o.get("single", 0.0)
        ratio = lambda a: f"{a / mix:.2f}x" if mix else "-"
        print(f"{n:9d} {default:9.0f} {p[best_name]:9.0f} {best_name:>17s} {mix:10.0f} {sgl:10.0f} "
              f"{ratio(default):>11s} {ratio(p[best_name]):>9s}")


if __name__ == "__main__":
    main()
