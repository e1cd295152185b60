#!/usr/bin/python3
"""Replica ensembles and temperature replica exchange over MPI (issue #16), run as users run them:
`mpirun -np K pairmd run CONFIG` on the CPU backend, on this machine's cores (--oversubscribe).

usage: check_replicas.py TEST PAIRMD_BINARY SCRATCH_DIR

TEST is one of
  acceptance  the measured acceptance of exchanges between two temperatures equals the one
              predicted from the two replicas' potential-energy distributions (mean of
              min(1, exp(dbeta dU)) over independent pairs of samples)
  pe          <PE> at each temperature of a 4-replica exchange run equals <PE> of plain runs at
              that temperature, within the statistical error (block averages)
  restart     a run of 2 x 1000 steps with a restart in between ends bitwise where a straight
              run of 2000 steps does: positions, velocities, exchange state, exchange log, walk;
              checkpoints of two ensembles are refused as a restart's set
  demux       `pairmd demux` writes per-temperature trajectories: each frame is the frame of the
              replica the walk puts at that temperature, and the kinetic temperature of each
              file is its ladder temperature
  demux_inputs  `pairmd demux` refuses, with exit 2 naming the file, trajectories and checkpoints
              of another run or ensemble (another particle count too) and walks that end early,
              hold no permutation or an exchange that could not have happened
  signal      SIGINT to one rank (not to mpirun) stops every rank at one meeting, with checkpoints
              of that step, exit 130; the ensemble restarts from them and ends bitwise where a
              run that was not interrupted does (positions, exchange log, walk)
  kill        SIGKILL of one rank: mpirun ends the job, every replica's files stay readable
              (trajectories, checkpoints, thermo) and the ensemble restarts from its checkpoints
  fulldisk    a full disk that stops replica 0 between checkpoints while replica 1 goes on to the
              next meeting: the checkpoints are of different steps, and the restart goes on from
              the common checkpoints, bitwise as if nothing had stopped
  killrandom  SIGKILL of a random rank at random times (PAIRMD_REPLICA_KILLS, default 3): every
              kill leaves a set the ensemble restarts from; the end is bitwise a straight run's
              (PAIRMD_REPLICA_KILL_TRAJECTORY=1: with trajectories, and demux at the end)
  failure     a replica that blows up stops the ensemble, the message names it, the others
              close their files with checkpoints
  config      bad ladders and counts the ranks do not divide are config errors (exit 2), with
              file:line:key
  nompi       without mpirun, the K replicas run as threads of one process: an MPI ensemble's files
              and, on the CPU backend, bit for bit the ensemble mpirun gives; its restart (runs in
              every build; the comparison with mpirun where there is MPI)
  perrank     mpirun -np 2 with replicas.count 4 (two replicas per rank, as threads): bit for bit
              the 4 threads' and the 4 ranks' ensemble (states, thermo, exchange log, walk,
              acceptance; PAIRMD_PERRANK_STEPS steps, default 1000), restarts bitwise (from its
              own checkpoints and from 4 ranks'), demux, a blow-up that stops all four
  perrank_signal  SIGTERM to one rank of 2 x 2 replicas stops all four at one meeting with
              checkpoints of that step (exit 130); the restart ends bitwise as a straight run
Exit 77: skipped (this pairmd has no MPI, or mpirun is missing), with the reason.
"""
import csv
import math
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")

# A small LJ liquid (256 particles) on the CPU backend: fast enough for 2-4 replicas on 2 cores.
BASE = """title: replica test
units: lj
steps: {steps}
backend: cpu
system:
  types: [{{name: A, mass: 1.0}}]
  lattice: {{kind: fcc, cells: 4, density: 0.8442}}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{{types: [A, A], epsilon: 1.0, sigma: 1.0}}]
integrator: {{kind: langevin, dt: 0.005, temperature: {T}, friction: 1.0, seed: 11}}
output:
  thermo_every: {thermo}
  progress: off
  checkpoint_every: {checkpoint}
  trajectory: {{every: {traj}, velocities_every: {traj}, observables_every: {traj}, flush_seconds: 0.2}}
"""


def config(path, steps, replicas=None, T=1.2, thermo=20, checkpoint=1000, traj=100):
    text = BASE.format(steps=steps, T=T, thermo=thermo, checkpoint=checkpoint, traj=traj)
    if replicas:
        text += "replicas:\n" + "".join(f"  {line}\n" for line in replicas.strip().splitlines())
    with open(path, "w") as f:
        f.write(text)
    return path


def run(cmd, **kw):
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, **kw)
    return p.returncode, p.stdout, p.stderr


def mpirun(k, args, **kw):
    return run(MPIRUN + ["-np", str(k), PAIRMD] + args, **kw)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok:", msg)


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def column(rows_, prefix):
    key = next(k for k in rows_[0] if k.startswith(prefix))
    return np.array([float(r[key]) for r in rows_])


def block_mean(x, blocks=10):
    """Mean and its standard error from `blocks` block averages (correlated samples)."""
    n = len(x) // blocks * blocks
    b = np.asarray(x[:n]).reshape(blocks, -1).mean(axis=1)
    return float(np.mean(x)), float(b.std(ddof=1) / math.sqrt(blocks))


def walk(prefix):
    w = rows(prefix + ".walk.csv")
    return [(int(r["step"]), [int(r[k]) for k in r if k.startswith("replica")]) for r in w]


def temperature_index(w, replica, step):
    """The temperature index of `replica` at frame `step`: the last assignment at or before it."""
    idx = None
    for s, t in w:
        if s <= step:
            idx = t[replica]
        else:
            break
    return idx


# ---------------------------------------------------------------------------------------------

def test_acceptance():
    cfg = config("acc.yaml", 30000, replicas="count: 2\ntemperatures: [1.2, 1.3]\nexchange_every: 20", traj=1000)
    rc, out, err = mpirun(2, ["run", cfg], timeout=600)
    check(rc == 0, f"2-replica exchange run completed (rc {rc}) {err[-2000:]}")
    log = rows("acc.exchange.csv")
    acc = np.array([int(r["accepted"]) for r in log])
    ulo = np.array([float(r["energy_low"]) for r in log])
    uhi = np.array([float(r["energy_high"]) for r in log])
    # Leave out the first tenth (the lattice melting).
    cut = len(log) // 10
    acc, ulo, uhi = acc[cut:], ulo[cut:], uhi[cut:]
    dbeta = 1 / 1.2 - 1 / 1.3
    # Prediction: every sample at T_low against every sample at T_high, as if independent.
    pred = float(np.mean(np.minimum(1.0, np.exp(dbeta * (ulo[:, None] - uhi[None, :])))))
    obs, se = block_mean(acc.astype(float))
    print(f"acceptance measured {obs:.4f} +- {se:.4f} over {len(acc)} attempts; predicted {pred:.4f}")
    # The run's own report says the same numbers.
    check("acceptance of each pair" in out, "the final report gives the acceptance")
    check("round trips" in out, "the final report gives the round trips")
    check(abs(obs - pred) < 4 * se + 0.02, f"measured acceptance {obs:.4f} matches the prediction {pred:.4f} "
          f"(4 standard errors {4 * se:.4f} + 0.02)")
    check(0.05 < pred < 0.95, "the two temperatures overlap enough for the test to mean something")
    check(os.path.getsize("acc.walk.svg") > 500, "the walk plot acc.walk.svg is written")


def test_pe():
    ladder = [1.2, 1.3, 1.4, 1.5]
    steps, cut = 24000, 4000
    cfg = config("pe.yaml", steps, replicas=f"count: 4\ntemperatures: {ladder}\nexchange_every: 100", traj=100000)
    rc, out, err = mpirun(4, ["run", cfg], timeout=900)
    check(rc == 0, f"4-replica exchange run completed (rc {rc}) {err[-2000:]}")
    w = walk("pe")
    per_t = {t: [] for t in range(4)}
    for r in range(4):
        for row in rows(f"pe.r{r}.thermo.csv"):
            s = int(row["step"])
            if s < cut:
                continue
            pe = float(next(v for k, v in row.items() if k.startswith("potential_energy")))
            per_t[temperature_index(w, r, s)].append(pe)
    # Plain single-temperature runs of the same length, two at a time.
    procs = []
    for t, T in enumerate(ladder):
        c = config(f"plain{t}.yaml", steps, T=T, traj=100000)
        procs.append(subprocess.Popen([PAIRMD, "run", c], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        if len(procs) == 2 or t == 3:
            for p in procs:
                check(p.wait(timeout=900) == 0, "a plain run completed")
            procs = []
    for t, T in enumerate(ladder):
        plain = [float(next(v for k, v in row.items() if k.startswith("potential_energy")))
                 for row in rows(f"plain{t}.thermo.csv") if int(row["step"]) >= cut]
        # Exchange samples at one temperature come from several replicas in turn; blocks in step
        # order of each replica's rows are still correlated within a block only.
        m1, e1 = block_mean(per_t[t])
        m2, e2 = block_mean(plain)
        tol = 4 * math.hypot(e1, e2)
        print(f"T {T}: <PE> exchange {m1:.2f} +- {e1:.2f} ({len(per_t[t])} rows), plain {m2:.2f} +- {e2:.2f}")
        check(abs(m1 - m2) < tol, f"<PE> at T {T} agrees with the plain run within 4 sigma ({abs(m1 - m2):.2f} < {tol:.2f})")
    # And <PE> rises with T (the test can tell temperatures apart).
    means = [np.mean(per_t[t]) for t in range(4)]
    check(all(a < b for a, b in zip(means, means[1:])), "<PE> increases along the ladder")


def checkpoint_state(path):
    import h5py
    with h5py.File(path, "r") as f:
        ens = f["run/ensemble"][()].decode()
        return (int(f["state"].attrs["step"]), f["state/position"][()], f["state/velocity"][()],
                "\n".join(l for l in ens.splitlines() if not l.startswith(("prefix", "ensemble "))))


def test_restart():
    cfg = config("rs.yaml", 2000, replicas="count: 2\nmin_temperature: 1.2\nmax_temperature: 1.3\nexchange_every: 50",
                 checkpoint=1000)
    rc, _, err = mpirun(2, ["run", cfg], timeout=600)
    check(rc == 0, f"straight run (rc {rc}) {err[-1500:]}")
    rc, _, err = mpirun(2, ["run", cfg, "--output", "rb", "--steps", "1000"], timeout=600)
    check(rc == 0, f"first half (rc {rc}) {err[-1500:]}")
    rc, out, err = mpirun(2, ["run", cfg, "--restart", "rb.r{replica}.checkpoint.h5", "--steps", "2000"], timeout=600)
    check(rc == 0, f"restart of the ensemble (rc {rc}) {err[-1500:]}")
    for r in range(2):
        a, b = checkpoint_state(f"rs.r{r}.checkpoint.h5"), checkpoint_state(f"rb.r{r}.checkpoint.h5")
        check(a[0] == b[0] == 2000, f"replica {r}: both end at step 2000")
        check(np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2]), f"replica {r}: positions and velocities bitwise equal")
        check(a[3] == b[3], f"replica {r}: exchange state (ladder, assignment, counter, statistics) equal")
        ta = [l for l in open(f"rs.r{r}.thermo.csv")]
        tb = [l for l in open(f"rb.r{r}.thermo.csv")]
        strip = lambda ls: [",".join(l.split(",")[:7]) for l in ls]  # without steps/s
        check(strip(ta) == strip(tb), f"replica {r}: thermo rows equal")
    for f in ("exchange.csv", "walk.csv"):
        check(open("rs." + f).read() == open("rb." + f).read(), f"the {f} files are identical")
    # Checkpoints of two ensembles, even of one config and one step, are not one ensemble's.
    shutil.copy("rs.r0.checkpoint.h5", "mix.r0.checkpoint.h5")
    shutil.copy("rb.r1.checkpoint.h5", "mix.r1.checkpoint.h5")
    before = open("rs.r0.thermo.csv").read(), open("rb.r1.thermo.csv").read()
    rc, out, err = mpirun(2, ["run", cfg, "--restart", "mix.r{replica}.checkpoint.h5", "--steps", "2100"], timeout=600)
    check(rc == 2 and "different ensembles" in err, f"a restart from checkpoints of two ensembles is refused (rc {rc}) {err[-500:]}")
    check((open("rs.r0.thermo.csv").read(), open("rb.r1.thermo.csv").read()) == before, "and changes nothing")


def test_demux():
    cfg = config("dm.yaml", 6000, replicas="count: 2\ntemperatures: [1.0, 2.0]\nexchange_every: 50", traj=50)
    # Far-apart temperatures: few exchanges succeed, so the kinetic temperatures tell files apart.
    rc, _, err = mpirun(2, ["run", cfg], timeout=600)
    check(rc == 0, f"run (rc {rc}) {err[-1500:]}")
    cfg2 = config("dm2.yaml", 6000, replicas="count: 2\ntemperatures: [1.2, 1.3]\nexchange_every: 50", traj=50)
    rc, _, err = mpirun(2, ["run", cfg2], timeout=600)
    check(rc == 0, f"run with frequent exchanges (rc {rc}) {err[-1500:]}")
    import h5py
    for prefix, ladder in (("dm", [1.0, 2.0]), ("dm2", [1.2, 1.3])):
        rc, out, err = run([PAIRMD, "demux", prefix])
        check(rc == 0, f"pairmd demux {prefix} (rc {rc}) {err}")
        w = walk(prefix)
        moved = 0
        for t, T in enumerate(ladder):
            with h5py.File(f"{prefix}.T{t}.h5", "r") as f:
                steps = f["particles/all/position/step"][()]
                pos = f["particles/all/position/value"]
                temp = f["observables/temperature/value"][()]
                for i, s in enumerate(steps):
                    r = next(r for r in range(2) if temperature_index(w, r, s) == t)
                    moved += r != t
                    with h5py.File(f"{prefix}.r{r}.h5", "r") as g:
                        j = list(g["particles/all/position/step"][()]).index(s)
                        if not np.array_equal(g["particles/all/position/value"][j], pos[i]):
                            fail(f"{prefix}.T{t}.h5 frame {i} (step {s}) is not replica {r}'s frame")
                m = float(np.mean(temp[len(temp) // 5:]))
                print(f"{prefix}.T{t}.h5: {len(steps)} frames, mean kinetic temperature {m:.3f} (ladder {T})")
                check(abs(m - T) < 0.08 * T, f"{prefix}.T{t}.h5 is at temperature {T} ({m:.3f})")
        check(True, f"{prefix}: every frame is the one the walk names")
        if prefix == "dm2":
            check(moved > 0, "dm2: the demuxed files take frames from both replicas")


def demux_case(name, change, words):
    """A copy of the ensemble di with one thing changed: demux refuses it with exit 2, a message
    that names the file and has `words`, and writes nothing."""
    os.makedirs(name)
    for f in os.listdir("."):
        if f.startswith("di.") and os.path.isfile(f):
            shutil.copy(f, os.path.join(name, f))
    os.chdir(name)
    try:
        bad = change()
        rc, out, err = run([PAIRMD, "demux", "di"])
        check(rc == 2 and bad in err and all(w in err for w in words),
              f"{name}: exit 2 naming {bad} ({rc}: {err.strip()[:300]})")
        check(not any(".T" in f for f in os.listdir(".")), f"{name}: nothing was written")
    finally:
        os.chdir("..")


def replace_file(target, source):
    def change():
        shutil.copy(os.path.join("..", source), target)
        return target
    return change


def edit_walk(edit):
    def change():
        lines = open("di.walk.csv").read().splitlines()
        open("di.walk.csv", "w").write("\n".join(edit(lines)) + "\n")
        return "di.walk.csv"
    return change


def shift_steps(path):
    def change():
        import h5py
        with h5py.File(path, "r+") as f:
            d = f["particles/all/position/step"]
            d[-1] = d[-1] + 10
        return path
    return change


def test_demux_inputs():
    ladder = "count: 2\ntemperatures: [1.2, 1.3]\nexchange_every: 50"
    cfg = config("di.yaml", 600, replicas=ladder, traj=50, checkpoint=200)
    rc, _, err = mpirun(2, ["run", cfg], timeout=600)
    check(rc == 0, f"the ensemble di (rc {rc}) {err[-1500:]}")
    rc, _, err = mpirun(2, ["run", cfg, "--output", "dj", "--set", "replicas.exchange_every=40", "--set",
                            "integrator.seed=12"], timeout=600)
    check(rc == 0, f"another ensemble dj of the same system (rc {rc}) {err[-1500:]}")
    single = config("single.yaml", 600, traj=50)
    rc, _, err = run([PAIRMD, "run", single, "--output", "same"])
    check(rc == 0, f"a single run of the same system (rc {rc}) {err[-1500:]}")
    rc, _, err = run([PAIRMD, "run", single, "--output", "small", "--set", "system.lattice.cells=3",
                      "--set", "force_field.pair.0.cutoff=2.0"])
    check(rc == 0, f"a single run of 108 particles (rc {rc}) {err[-1500:]}")
    rc, out, err = run([PAIRMD, "demux", "di"])
    check(rc == 0, f"demux of the ensemble as it was written (rc {rc}) {err}")
    for f in ("di.T0.h5", "di.T1.h5"):
        os.remove(f)
    # Files that are not of this ensemble.
    demux_case("fewer_particles", replace_file("di.r1.h5", "small.h5"), ["another run"])
    demux_case("another_run", replace_file("di.r1.h5", "same.h5"), ["another run"])
    def forged(source):
        def change():
            import h5py
            with h5py.File("di.r1.h5", "r") as f:
                run_id = f["parameters"].attrs["run_id"]
            shutil.copy(os.path.join("..", source), "di.r1.h5")
            with h5py.File("di.r1.h5", "r+") as f:
                f["parameters"].attrs["run_id"] = run_id
            return "di.r1.h5"
        return change
    demux_case("fewer_particles_same_run_id", forged("small.h5"), ["108 particles", "has 256"])
    demux_case("another_ensemble", replace_file("di.r1.checkpoint.h5", "dj.r1.checkpoint.h5"), ["another ensemble"])
    demux_case("another_ensembles_walk", replace_file("di.walk.csv", "dj.walk.csv"), ["checkpoint"])
    # A walk that ends early, one whose rows are not permutations, one with an exchange that
    # could not have happened (odd exchanges of a ladder of two try no pair).
    demux_case("walk_ends_early", edit_walk(lambda l: l[:-4]), ["exchange"])
    demux_case("walk_not_a_permutation", edit_walk(lambda l: l[:5] + [l[5].rsplit(",", 2)[0] + ",0,0"] + l[6:]),
               ["permutation"])
    def odd_swap(lines):
        row = lines[3].split(",")  # exchange 1 (odd): no pair is tried
        row[2], row[3] = row[3], row[2]
        return lines[:3] + [",".join(row)] + lines[4:]
    demux_case("walk_impossible_swap", edit_walk(odd_swap), ["exchange 1"])
    # Trajectories whose frames are not of the same steps.
    demux_case("frame_steps", shift_steps("di.r1.h5"), ["step"])


def start_ensemble(prefix, cfg, k=2):
    p = subprocess.Popen(MPIRUN + ["-np", str(k), PAIRMD, "run", cfg, "--output", prefix], env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until the ensemble runs (its exchange log has rows).
    for _ in range(600):
        if os.path.exists(prefix + ".exchange.csv") and len(open(prefix + ".exchange.csv").readlines()) > 20:
            break
        if p.poll() is not None:
            fail("the ensemble ended early: " + p.stderr.read()[-2000:])
        time.sleep(0.1)
    return p


def rank_pids(p):
    """The ranks: the children of mpirun that run pairmd."""
    out = subprocess.run(["pgrep", "-P", str(p.pid), "-f", PAIRMD], capture_output=True, text=True).stdout
    return sorted(int(x) for x in out.split())


def wait_gone(pids, timeout=60):
    """Until the processes `pids` have ended: mpirun may exit before the ranks it kills do, and a
    rank still alive holds its HDF5 files' locks (h5py then cannot open them: errno 11)."""
    end = time.time() + timeout
    for pid in pids:
        while time.time() < end:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split(")")[-1].split()[0] == "Z":  # ended, not yet reaped
                        break
            except FileNotFoundError:
                break
            time.sleep(0.05)
        else:
            fail(f"rank {pid} still runs {timeout} s after mpirun ended")


def readable(prefix, k):
    import h5py
    for r in range(k):
        p = f"{prefix}.r{r}"
        with h5py.File(p + ".h5", "r") as f:
            n = f["particles/all/position/value"].shape[0]
            check(n > 0, f"{p}.h5 opens, {n} frames")
        with h5py.File(p + ".checkpoint.h5", "r") as f:
            check(int(f["state"].attrs["step"]) >= 0, f"{p}.checkpoint.h5 opens (step {int(f['state'].attrs['step'])})")
        check(len(rows(p + ".thermo.csv")) > 0, f"{p}.thermo.csv parses")


def thermo_rows(path, every):
    """The thermo rows at multiples of `every`, without the timing column (steps/s)."""
    out = []
    for line in open(path).readlines()[1:]:
        cells = line.split(",")
        if int(cells[0]) % every == 0:
            out.append(",".join(cells[:7]))
    return out


def same_as_straight_run(prefix, cfg, end, thermo_every, k=2, ranks=2):
    """The ensemble `prefix` of `k` replicas, continued to step `end`, is bitwise the straight run
    of `end` steps on `ranks` ranks: positions, velocities, exchange state, thermo rows, exchange
    log and walk."""
    rc, _, err = mpirun(ranks, ["run", cfg, "--output", prefix + "_ref", "--steps", str(end)], timeout=600)
    check(rc == 0, f"the straight run to step {end} (rc {rc}) {err[-1500:]}")
    for r in range(k):
        a, b = checkpoint_state(f"{prefix}.r{r}.checkpoint.h5"), checkpoint_state(f"{prefix}_ref.r{r}.checkpoint.h5")
        check(a[0] == b[0] == end, f"replica {r}: both end at step {end} ({a[0]}, {b[0]})")
        check(np.array_equal(a[1], b[1]) and np.array_equal(a[2], b[2]),
              f"replica {r}: positions and velocities bitwise those of the straight run")
        check(a[3] == b[3], f"replica {r}: exchange state (ladder, assignment, counter, statistics) equal")
        check(thermo_rows(f"{prefix}.r{r}.thermo.csv", thermo_every) == thermo_rows(f"{prefix}_ref.r{r}.thermo.csv", thermo_every),
              f"replica {r}: thermo rows equal")
    for f in ("exchange.csv", "walk.csv"):
        check(open(f"{prefix}.{f}").read() == open(f"{prefix}_ref.{f}").read(), f"the {f} files are identical")
    if os.path.exists(f"{prefix}.r0.h5"):
        rc, out, err = run([PAIRMD, "demux", prefix])
        check(rc == 0, f"pairmd demux {prefix} takes the files the restarts continued (rc {rc}) {err[-500:]}")


def test_signal():
    # Meetings every 40 steps, thermo rows every 20: the stop (always at a meeting) has its row.
    cfg = config("sg.yaml", 10 ** 7, replicas="count: 2\ntemperatures: [1.2, 1.3]\nexchange_every: 40",
                 checkpoint=10 ** 6)
    p = start_ensemble("sg", cfg)
    pids = rank_pids(p)
    check(len(pids) == 2, f"two ranks run ({pids})")
    os.kill(pids[-1], signal.SIGINT)  # one rank only; the other learns it at the next meeting
    out, err = p.communicate(timeout=120)
    check(p.returncode == 130, f"the ensemble stops with exit 130 (got {p.returncode})")
    wait_gone(pids)
    check("interrupted" in err and "--restart sg.r{replica}.checkpoint.h5" in err, "the message says how to continue")
    steps = [checkpoint_state(f"sg.r{r}.checkpoint.h5")[0] for r in range(2)]
    check(steps[0] == steps[1] and steps[0] > 0, f"both replicas wrote a checkpoint of one step ({steps})")
    check(steps[0] % 40 == 0, f"the stop is at a meeting (step {steps[0]})")
    readable("sg", 2)
    end = steps[0] + 200
    rc, out, err = mpirun(2, ["run", cfg, "--restart", "sg.r{replica}.checkpoint.h5", "--steps", str(end)],
                          timeout=300)
    check(rc == 0, f"the ensemble restarts from them (rc {rc}) {err[-1500:]}")
    # The interruption lands on a meeting: its exchange happens before the stop, as in a run that
    # was not interrupted, so the restart goes on bitwise.
    same_as_straight_run("sg", cfg, end, 20)


def test_kill():
    cfg = config("kl.yaml", 10 ** 7, replicas="count: 2\ntemperatures: [1.2, 1.3]\nexchange_every: 50", checkpoint=500)
    p = start_ensemble("kl", cfg)
    while not all(c is not None for _, c in common_steps("kl")):  # past a checkpoint every replica wrote
        if p.poll() is not None:
            fail("the ensemble ended early: " + p.stderr.read()[-2000:])
        time.sleep(0.05)
    pids = rank_pids(p)
    check(len(pids) == 2, f"two ranks run ({pids})")
    os.kill(pids[-1], signal.SIGKILL)
    out, err = p.communicate(timeout=120)
    check(p.returncode != 0, f"mpirun reports the failure (exit {p.returncode})")
    wait_gone(pids)
    readable("kl", 2)
    check(len(rows("kl.exchange.csv")) > 0 and len(rows("kl.walk.csv")) > 0, "the exchange log and the walk parse")
    steps = [checkpoint_state(f"kl.r{r}.checkpoint.h5")[0] for r in range(2)]
    rc, out, err = mpirun(2, ["run", cfg, "--restart", "kl.r{replica}.checkpoint.h5", "--steps", str(max(steps) + 200)],
                          timeout=300)
    # From the checkpoints, or the common checkpoints where the kill left them of different steps.
    check(rc == 0, f"the ensemble restarts from the checkpoints of steps {steps} (rc {rc}) {err[-1500:]}")


def common_steps(prefix, k=2):
    """The steps of each replica's checkpoint and common checkpoint (None where there is none)."""
    import h5py
    out = []
    for r in range(k):
        pair = []
        for f in (f"{prefix}.r{r}.checkpoint.h5", f"{prefix}.r{r}.checkpoint.common.h5"):
            try:
                with h5py.File(f, "r") as h:
                    pair.append(int(h["state"].attrs["step"]))
            except (OSError, KeyError):
                pair.append(None)
        out.append(tuple(pair))
    return out


def test_fulldisk():
    lib = os.environ.get("PAIRMD_SMALL_DISK_LIBRARY", "")
    if not os.path.exists(lib):
        print("SKIP: no small-disk library (PAIRMD_SMALL_DISK_LIBRARY; tests/small_disk_preload.c)")
        sys.exit(77)
    os.makedirs("disk")
    os.chdir("disk")
    cfg = config("fd.yaml", 2000, replicas="count: 2\ntemperatures: [1.2, 1.3]\nexchange_every: 50", thermo=10,
                 checkpoint=100, traj=10)
    with open(cfg) as f:
        text = f.read().replace("flush_seconds: 0.2", "flush_seconds: 0")
    with open(cfg, "w") as f:
        f.write(text)
    # The disk is full for replica 0 only (its trajectory fills it first); replica 1 writes on to
    # the next meeting and its checkpoint there.
    small = dict(ENV, LD_PRELOAD=lib, PAIRMD_TEST_DISK_DIR=".", PAIRMD_TEST_DISK_BYTES=str(5 * 10 ** 6),
                 PAIRMD_TEST_DISK_RANK="0")
    p = subprocess.run(MPIRUN + ["-np", "2", PAIRMD, "run", cfg], env=small, capture_output=True, text=True, timeout=600)
    check(p.returncode == 1 and "replica 0 (fd.r0.*) failed" in p.stderr and "No space left" in p.stderr,
          f"the full disk stops the ensemble, exit 1 naming replica 0 (rc {p.returncode}) {p.stderr[-800:]}")
    steps = common_steps("fd")
    print("checkpoint, common checkpoint steps of each replica:", steps)
    check(steps[0][0] != steps[1][0], f"the replicas' newest checkpoints are of different steps ({steps})")
    check("goes on from" in p.stderr and "common" in p.stderr, "the message says the restart goes on from the common step")
    # With room again, the command it printed continues the ensemble, bitwise as if it had not stopped.
    rc, out, err = mpirun(2, ["run", cfg, "--restart", "fd.r{replica}.checkpoint.h5"], timeout=600)
    check(rc == 0 and "goes on from there" in out, f"the restart goes on from the common step (rc {rc}) {err[-1500:]}")
    same_as_straight_run("fd", cfg, 2000, 10)


def test_killrandom():
    """SIGKILL of a random rank at a random time, again and again (PAIRMD_REPLICA_KILLS times;
    3 here, a long loop by hand): each time, the ensemble restarts from what the kill left, and
    the last restart runs to the end bitwise as a run that was never killed."""
    import random
    kills = int(os.environ.get("PAIRMD_REPLICA_KILLS", "3"))
    rng = random.Random(int(os.environ.get("PAIRMD_REPLICA_KILL_SEED", "1")))
    end = 10 ** 7
    # A checkpoint at every meeting: as many chances as can be for a kill to land between two
    # replicas' checkpoints of one step. No trajectories unless PAIRMD_REPLICA_KILL_TRAJECTORY=1:
    # a kill during an H5MD flush can leave one unreadable (issue #29 item 6), which is another
    # matter than the ensemble's set of checkpoints.
    traj = 20 if os.environ.get("PAIRMD_REPLICA_KILL_TRAJECTORY") == "1" else 0
    cfg = config("kr.yaml", end, replicas="count: 2\ntemperatures: [1.2, 1.3]\nexchange_every: 20",
                 checkpoint=20, traj=traj)
    args = ["run", cfg]
    stops = []
    hung = 0
    for n in range(kills):
        p = subprocess.Popen(MPIRUN + ["-np", "2", PAIRMD] + args, env=ENV, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        # The first run is killed once a set of checkpoints exists; restarts at any time.
        while n == 0 and not all(s[1] is not None for s in common_steps("kr")):
            if p.poll() is not None:
                fail("the ensemble ended early: " + p.stderr.read()[-2000:])
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 2.0))
        pids = rank_pids(p)
        while len(pids) < 2 and p.poll() is None:  # mpirun has not started both ranks yet
            time.sleep(0.01)
            pids = rank_pids(p)
        if p.poll() is None:
            os.kill(rng.choice(pids), signal.SIGKILL)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # Open MPI's mpirun can hang when a rank dies while MPI starts: end the job here.
            hung += 1
            for pid in rank_pids(p):
                os.kill(pid, signal.SIGKILL)
            p.kill()
            out, err = p.communicate()
        if p.returncode == 2 or "Traceback" in err:
            fail(f"kill {n}: the restart refused the files the last kill left (rc {p.returncode}): {err[-2000:]}")
        steps = common_steps("kr")
        stops.append(steps)
        said = [line for line in err.splitlines() if line.startswith("pairmd run:")][:2]
        print(f"kill {n}: rc {p.returncode}, checkpoint and common checkpoint steps {steps} {said}")
        args = ["run", cfg, "--restart", "kr.r{replica}.checkpoint.h5"]
    # The last restart runs to 200 steps past the newest checkpoint and must match a straight run.
    last = max(s for pair in common_steps("kr") for s in pair if s is not None) + 200
    rc, out, err = mpirun(2, args + ["--steps", str(last)], timeout=600)
    check(rc == 0, f"after {kills} kills the ensemble restarts and runs to step {last} (rc {rc}) {err[-1500:]}")
    differ = sum(1 for s in stops if s[0][0] != s[1][0])
    print(f"{kills} kills; {differ} left the replicas' newest checkpoints at different steps; mpirun hung after "
          f"{hung} (ended by the test)")
    same_as_straight_run("kr", cfg, last, 20)


def test_failure():
    cfg = config("fl.yaml", 3000, replicas="count: 2\ntemperatures: [1.2, 50000]\nexchange_every: 50")
    rc, out, err = mpirun(2, ["run", cfg], timeout=300)
    check(rc == 1, f"exit 1 (got {rc})")
    check("replica 1 (fl.r1.*) failed" in err, "the message names the replica that failed")
    check("max_step_displacement" in err, "and says why")
    readable("fl", 2)


def test_config():
    cases = [
        ("count: 3\ntemperatures: [1.2, 1.1, 1.4]", 3, "replicas.temperatures[1]", "must increase"),
        ("count: 2\ntemperatures: [1.2, -1.0]", 2, "replicas.temperatures[1]", "> 0"),
        ("count: 2\nmin_temperature: 1.3\nmax_temperature: 1.2", 2, "replicas.max_temperature", "above min_temperature"),
        ("count: 3\ntemperatures: [1.2, 1.3]", 2, "replicas.count", "temperatures lists 2"),
        # Each rank runs replicas.count / ranks replicas: a count the ranks do not divide is refused.
        ("count: 3\ntemperatures: [1.2, 1.3, 1.4]", 2, "replicas.count",
         "3 replicas cannot be shared out evenly among 2 MPI ranks"),
        ("count: 2\ntemperatures: [1.2, 1.3]", 4, "replicas.count",
         "2 replicas cannot be shared out evenly among 4 MPI ranks"),
        ("mode: independent\ncount: 2\ntemperatures: [1.2, 1.3]", 2, "replicas.temperatures", "mode: exchange"),
    ]
    for n, (rep, k, key, words) in enumerate(cases):
        cfg = config(f"bad{n}.yaml", 100, replicas=rep)
        rc, out, err = mpirun(k, ["run", cfg], timeout=120)
        check(rc == 2 and key in err and words in err and f"bad{n}.yaml:" in err,
              f"{rep.replace(chr(10), '; ')} on {k} ranks: exit 2 naming {key} ({err.strip().splitlines()[0] if err else ''})")
        check(not any(f.startswith(f"bad{n}.") and not f.endswith(".yaml") for f in os.listdir(".")), "nothing was written")
    rc, out, err = mpirun(2, ["run", config("none.yaml", 100)], timeout=120)
    check(rc == 2 and "no replicas section" in err, "2 ranks without a replicas section: exit 2")
    # A second ensemble on the prefix of an earlier one is refused; the way to continue that one
    # is the ensemble's restart.
    again = config("again.yaml", 100, replicas="count: 2\ntemperatures: [1.2, 1.3]")
    rc, out, err = mpirun(2, ["run", again], timeout=120)
    check(rc == 0, f"an ensemble of 100 steps (rc {rc}) {err[-800:]}")
    rc, out, err = mpirun(2, ["run", again], timeout=120)
    check(rc == 2 and "mpirun -np 2 pairmd run again.yaml --restart 'again.r{replica}.checkpoint.h5'" in err,
          f"the same again is refused, and told how to continue the ensemble ({err.strip().splitlines()[:2]})")


def test_nompi():
    """Without mpirun the K replicas run as threads of this one process (docs/ensembles.md): the
    files of an MPI ensemble, and on the CPU backend (each replica a CPU backend of its own) the
    very ensemble mpirun gives, bit for bit: states, exchange log and walk; and the restart."""
    cfg = config("nm.yaml", 400, replicas="count: 2\ntemperatures: [1.2, 1.3]\nexchange_every: 50", checkpoint=200)
    env = {k: v for k, v in ENV.items() if not k.startswith(("OMPI_", "PMI", "PMIX"))}
    p = subprocess.run([PAIRMD, "run", cfg, "--output", "th"], env=env, capture_output=True, text=True)
    check(p.returncode == 0, f"K = 2 without mpirun runs in one process (exit {p.returncode}: {p.stderr[-800:]})")
    check("threads of one process" in p.stdout, "the log says the replicas are threads of one process")
    for r in (0, 1):
        check(os.path.exists(f"th.r{r}.checkpoint.h5") and os.path.exists(f"th.r{r}.log"), f"replica {r}'s files")
    exchanges = rows("th.exchange.csv")
    # 8 meetings; with two replicas only the even ones have a pair to try.
    check(len(exchanges) == 4, f"the exchanges are logged ({len(exchanges)} rows)")
    if shutil.which("mpirun") and "mpi: yes" in subprocess.run([PAIRMD, "--version"], capture_output=True,
                                                                 text=True).stdout:
        rc, _, err = mpirun(2, ["run", cfg, "--output", "mp"], timeout=600)
        check(rc == 0, f"the same ensemble under mpirun ({err[-400:]})")
        for r in (0, 1):
            a, b = checkpoint_state(f"th.r{r}.checkpoint.h5"), checkpoint_state(f"mp.r{r}.checkpoint.h5")
            check(a[0] == b[0] and (a[1] == b[1]).all() and (a[2] == b[2]).all() and a[3] == b[3],
                  f"replica {r}: threads and MPI ranks end bit for bit alike (step {a[0]})")
        check(rows("th.exchange.csv") == rows("mp.exchange.csv"), "the exchange logs are the same")
        check(rows("th.walk.csv") == rows("mp.walk.csv"), "the walks are the same")
    # The restart of the threads' ensemble, in threads again.
    p = subprocess.run([PAIRMD, "run", cfg, "--restart", "th.r{replica}.checkpoint.h5", "--steps", "600"], env=env,
                       capture_output=True, text=True)
    check(p.returncode == 0 and checkpoint_state("th.r0.checkpoint.h5")[0] == 600,
          f"the ensemble in threads restarts ({p.stderr[-500:]})")
    # One replica runs anywhere, like a plain run (its files are nm1.r0.*).
    cfg = config("nm1.yaml", 100, replicas="count: 1\ntemperatures: [1.2]")
    p = subprocess.run([PAIRMD, "run", cfg], env=env, capture_output=True, text=True)
    check(p.returncode == 0 and os.path.exists("nm1.r0.checkpoint.h5"), f"K = 1 runs without mpirun ({p.stderr[-500:]})")


# ---- ranks of several replicas each: mpirun -np 2 with replicas.count 4 ------------------------

PERRANK_LADDER = "count: 4\ntemperatures: [1.2, 1.25, 1.3, 1.35]\nexchange_every: 10"


def no_mpi_env():
    return {k: v for k, v in ENV.items() if not k.startswith(("OMPI_", "PMI", "PMIX"))}


def acceptance_lines(out):
    """The final report's acceptance of each pair of temperatures: '  T 1.2 <-> 1.25  0.400  (4 of 10)'."""
    return [" ".join(line.split()) for line in out.splitlines() if line.startswith("  T ") and "<->" in line]


def same_ensembles(a, b, k, thermo_every, what):
    """The ensembles `a` and `b` end bit for bit alike: every replica's state, exchange state and
    thermo rows, the exchange log and the walk."""
    for r in range(k):
        x, y = checkpoint_state(f"{a}.r{r}.checkpoint.h5"), checkpoint_state(f"{b}.r{r}.checkpoint.h5")
        check(x[0] == y[0] and np.array_equal(x[1], y[1]) and np.array_equal(x[2], y[2]) and x[3] == y[3],
              f"{what}: replica {r} ends bit for bit alike (step {x[0]}; positions, velocities, exchange state)")
        check(thermo_rows(f"{a}.r{r}.thermo.csv", thermo_every) == thermo_rows(f"{b}.r{r}.thermo.csv", thermo_every),
              f"{what}: replica {r}'s thermo rows are the same")
    for f in ("exchange.csv", "walk.csv"):
        check(open(f"{a}.{f}").read() == open(f"{b}.{f}").read(), f"{what}: the {f} files are identical")


def check_demux(prefix, k):
    """`pairmd demux PREFIX`: every frame of PREFIX.Tt.h5 is the frame of the replica the walk puts
    at temperature t."""
    import h5py
    rc, out, err = run([PAIRMD, "demux", prefix])
    check(rc == 0, f"pairmd demux {prefix} (rc {rc}) {err[-500:]}")
    w = walk(prefix)
    moved = 0
    for t in range(k):
        with h5py.File(f"{prefix}.T{t}.h5", "r") as f:
            steps = f["particles/all/position/step"][()]
            pos = f["particles/all/position/value"][()]
        for i, step in enumerate(steps):
            r = next(r for r in range(k) if temperature_index(w, r, step) == t)
            moved += r != t
            with h5py.File(f"{prefix}.r{r}.h5", "r") as g:
                j = list(g["particles/all/position/step"][()]).index(step)
                if not np.array_equal(g["particles/all/position/value"][j], pos[i]):
                    fail(f"{prefix}.T{t}.h5 frame {i} (step {step}) is not replica {r}'s frame")
    check(moved > 0, f"{prefix}: every demuxed frame is the one the walk names, from several replicas ({moved} moved)")


def test_perrank():
    """mpirun -np 2 with replicas.count 4 runs two replicas per rank as threads: bit for bit the
    ensemble of 4 threads in one process and of 4 ranks (states, thermo, exchange log, walk, so the
    acceptance too); restarts bitwise (2 x 2 from its own checkpoints, and from 4 ranks'); demux
    takes its files; a replica that blows up stops all four."""
    steps = int(os.environ.get("PAIRMD_PERRANK_STEPS", "1000"))
    cfg = config("pr.yaml", steps, replicas=PERRANK_LADDER, checkpoint=steps // 2, traj=50)
    t0 = time.time()
    rc, out, err = mpirun(2, ["run", cfg, "--output", "hy"], timeout=600)
    t_hybrid = time.time() - t0
    check(rc == 0, f"2 ranks x 2 replicas run (rc {rc}) {err[-1500:]}")
    check("on 2 threads in each of 2 MPI ranks" in out, "the start says how the replicas are laid out")
    check("continue with mpirun -np 2 pairmd run" in out, "the continue command has the job's 2 ranks")
    hybrid_acceptance = acceptance_lines(out)
    t0 = time.time()
    p = subprocess.run([PAIRMD, "run", cfg, "--output", "th"], env=no_mpi_env(), capture_output=True, text=True)
    t_threads = time.time() - t0
    check(p.returncode == 0, f"4 replicas as threads of one process (rc {p.returncode}) {p.stderr[-800:]}")
    t0 = time.time()
    rc, out, err = mpirun(4, ["run", cfg, "--output", "fr"], timeout=600)
    t_ranks = time.time() - t0
    check(rc == 0, f"4 ranks of one replica each (rc {rc}) {err[-1500:]}")
    print(f"wall time: 2 ranks x 2 threads {t_hybrid:.1f} s, 1 process x 4 threads {t_threads:.1f} s, "
          f"4 ranks x 1 {t_ranks:.1f} s")
    same_ensembles("hy", "th", 4, 20, "2 x 2 against 4 threads")
    same_ensembles("hy", "fr", 4, 20, "2 x 2 against 4 ranks")
    print("\n".join(hybrid_acceptance))
    check(hybrid_acceptance == acceptance_lines(out) and len(hybrid_acceptance) == 3,
          "the acceptance of every pair is the 4 ranks' (the same numbers)")
    log = rows("hy.exchange.csv")
    for pair in range(3):
        acc = [int(r["accepted"]) for r in log if int(r["pair"]) == pair]
        check(0 < sum(acc) < len(acc), f"pair {pair}: {sum(acc)} of {len(acc)} accepted (the test can tell)")
    # Restarts: 2 x 2 from its own checkpoints of the half-way step, and from 4 ranks' checkpoints.
    half = str(steps // 2)
    for prefix, first_ranks in (("hb", 2), ("hc", 4)):
        rc, _, err = mpirun(first_ranks, ["run", cfg, "--output", prefix, "--steps", half], timeout=600)
        check(rc == 0, f"{prefix}: {first_ranks} ranks to step {half} (rc {rc}) {err[-1500:]}")
        rc, out, err = mpirun(2, ["run", cfg, "--restart", prefix + ".r{replica}.checkpoint.h5", "--steps", str(steps)],
                              timeout=600)
        check(rc == 0, f"{prefix}: 2 ranks x 2 go on to step {steps} (rc {rc}) {err[-1500:]}")
        same_ensembles(prefix, "hy", 4, 20, f"{prefix} ({first_ranks} ranks, then 2 x 2) against the straight run")
    check_demux("hy", 4)
    # A replica that blows up stops the ensemble; the others close their files with checkpoints.
    bad = config("fl.yaml", 3000, replicas="count: 4\ntemperatures: [1.2, 1.3, 1.4, 50000]\nexchange_every: 50")
    rc, out, err = mpirun(2, ["run", bad], timeout=300)
    check(rc == 1 and "replica 3 (fl.r3.*) failed" in err and "max_step_displacement" in err,
          f"a blow-up of replica 3 stops the 2 x 2 ensemble, exit 1 naming it (rc {rc}) {err[-800:]}")
    readable("fl", 4)


def test_perrank_signal():
    """SIGTERM to one rank of 2 x 2 replicas stops all four at one meeting, with checkpoints of that
    step, exit 130; the ensemble restarts from them bitwise as a run that was not stopped."""
    cfg = config("ps.yaml", 10 ** 7, replicas=PERRANK_LADDER.replace("exchange_every: 10", "exchange_every: 40"),
                 checkpoint=10 ** 6)
    p = start_ensemble("ps", cfg)
    pids = rank_pids(p)
    check(len(pids) == 2, f"two ranks run ({pids})")
    os.kill(pids[-1], signal.SIGTERM)  # one rank, two replicas; the other rank learns it at the meeting
    out, err = p.communicate(timeout=120)
    check(p.returncode == 130, f"the ensemble stops with exit 130 (got {p.returncode}) {err[-800:]}")
    wait_gone(pids)
    check("--restart ps.r{replica}.checkpoint.h5" in err and "mpirun -np 2" in err, "the message says how to continue")
    steps = [checkpoint_state(f"ps.r{r}.checkpoint.h5")[0] for r in range(4)]
    check(len(set(steps)) == 1 and steps[0] > 0 and steps[0] % 40 == 0,
          f"the four replicas wrote checkpoints of one meeting ({steps})")
    check([s[1] for s in common_steps("ps", 4)] == steps, "and their common checkpoints are of that step")
    readable("ps", 4)
    end = steps[0] + 200
    rc, out, err = mpirun(2, ["run", cfg, "--restart", "ps.r{replica}.checkpoint.h5", "--steps", str(end)], timeout=300)
    check(rc == 0, f"the ensemble restarts from them (rc {rc}) {err[-1500:]}")
    same_as_straight_run("ps", cfg, end, 20, k=4, ranks=2)


TESTS = {"acceptance": test_acceptance, "pe": test_pe, "restart": test_restart, "demux": test_demux, "demux_inputs": test_demux_inputs,
         "signal": test_signal, "fulldisk": test_fulldisk, "killrandom": test_killrandom, "kill": test_kill, "failure": test_failure, "config": test_config, "nompi": test_nompi,
         "perrank": test_perrank, "perrank_signal": test_perrank_signal}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in TESTS:
        print(__doc__)
        sys.exit(2)
    name, PAIRMD, scratch = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    if name != "nompi":
        version = subprocess.run([PAIRMD, "--version"], capture_output=True, text=True).stdout
        if "mpi: yes" not in version:
            print("SKIP: this pairmd was built without MPI (install libopenmpi-dev openmpi-bin: scripts/setup.sh)")
            sys.exit(77)
        if shutil.which("mpirun") is None:
            print("SKIP: no mpirun on PATH (Debian's openmpi-bin)")
            sys.exit(77)
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    os.chdir(scratch)
    TESTS[name]()
    print("PASS")
