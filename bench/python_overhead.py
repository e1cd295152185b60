"""What driving pairmd from Python costs per step (issue 19): the LJ liquid of
configs/lj_liquid.yaml (N = 4,000) advanced by a `sim.run(1)` loop, by one `sim.run(S)` call,
and by the pairmd program (`pairmd run`), on the same backend, with the same outputs (the thermo
CSV every 1000 steps; no trajectory). The target: the run(1) loop no more than 20 % slower per
step than the program.

    PYTHONPATH=build/python python3 bench/python_overhead.py --pairmd build/pairmd --backend cuda

The program's per-step time is its own `performance:` line (time in the engine's advance(), the
whole run); Python's is the wall time of the loop, Python included, after the same warm-up.
Each is the median of --repeats runs. Results: a table on stdout, and --out PREFIX.csv.
"""
import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import pairmd

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--pairmd", required=True, help="the pairmd program of the same build")
parser.add_argument("--config", default=os.path.join(os.path.dirname(__file__), "..", "configs", "lj_liquid.yaml"))
parser.add_argument("--backend", default="cuda")
parser.add_argument("--steps", type=int, default=20000, help="timed steps per run")
parser.add_argument("--warmup", type=int, default=2000)
parser.add_argument("--repeats", type=int, default=3)
parser.add_argument("--out", default="python_overhead")
args = parser.parse_args()

SETS = ["output.trajectory.every=0", "output.trajectory.velocities_every=0", "output.trajectory.observables_every=0",
        "output.thermo_every=1000", "output.checkpoint_every=0", "output.progress=off"]


def cli_seconds_per_step(workdir, k):
    out = subprocess.run([args.pairmd, "run", args.config, "--backend", args.backend,
                          "--steps", str(args.warmup + args.steps), "--output", os.path.join(workdir, f"cli{k}")]
                         + [a for s in SETS for a in ("--set", s)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"performance: (\d+) steps in ([0-9.e+-]+) s", out)
    return float(m.group(2)) / int(m.group(1))


def python_seconds_per_step(workdir, k, one_call):
    overrides = [s for s in SETS]
    with pairmd.Simulation(args.config, overrides=overrides, backend=args.backend,
                           output=os.path.join(workdir, f"py{k}{'c' if one_call else 'l'}"), quiet=True) as sim:
        sim.run(args.warmup)
        t0 = time.perf_counter()
        if one_call:
            sim.run(args.steps)
        else:
            run = sim.run
            for _ in range(args.steps):
                run(1)
        t = time.perf_counter() - t0
        n = len(sim)
    return t / args.steps, n


rows = []
with tempfile.TemporaryDirectory() as work:
    cli, loop, call = [], [], []
    for k in range(args.repeats):
        cli.append(cli_seconds_per_step(work, k))
        s, n = python_seconds_per_step(work, k, one_call=False)
        loop.append(s)
        s, n = python_seconds_per_step(work, k, one_call=True)
        call.append(s)
cli_s, loop_s, call_s = statistics.median(cli), statistics.median(loop), statistics.median(call)
print(f"pairmd {pairmd.__version__}, Python {sys.version.split()[0]}, backend {args.backend}, N = {n}, "
      f"{args.steps} timed steps after {args.warmup}, median of {args.repeats}")
print(f"{'driver':28s} {'us/step':>10s} {'steps/s':>10s} {'vs program':>11s}")
for name, s in [("pairmd run (program)", cli_s), ("sim.run(S), one call", call_s), ("sim.run(1) loop", loop_s)]:
    print(f"{name:28s} {1e6 * s:10.2f} {1 / s:10.0f} {100 * (s / cli_s - 1):+10.1f}%")
    rows.append({"driver": name, "backend": args.backend, "n": n, "us_per_step": 1e6 * s,
                 "steps_per_s": 1 / s, "vs_program_percent": 100 * (s / cli_s - 1)})
verdict = "meets" if loop_s <= 1.2 * cli_s else "misses"
print(f"run(1) loop: {100 * (loop_s / cli_s - 1):+.1f}% per step against the program: {verdict} the 20 % target")
with open(args.out + ".csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
print(f"wrote {args.out}.csv")
