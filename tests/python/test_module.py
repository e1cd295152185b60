"""The pairmd Python module (docs/python.md), run by ctest (python.module) with the module of the
build tree on PYTHONPATH and PAIRMD_BINARY naming the pairmd program of the same build.

Each test checks physics or a guarantee that can fail: the same run from a file, a string and a
dict and from the CLI gives the same numbers; forces on a set pair are the analytic LJ force; a
restart continues bitwise; Ctrl-C leaves a checkpoint and complete files; the GIL is free while
the engine runs. GPU tests skip (with the reason) where there is no GPU.
"""
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import pairmd

HAVE_GPU, NO_GPU_REASON = pairmd.cuda_available(), pairmd.cuda_status()
BINARY = os.environ.get("PAIRMD_BINARY", "")
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def lj_config(prefix="lj", cells=4, steps=200, seed=7, thermo_every=50, trajectory_every=50, dt=0.005):
    """A small LJ liquid (4 * cells^3 particles), as a dict."""
    return {
        "units": "lj",
        "steps": steps,
        "system": {"types": [{"name": "A", "mass": 1.0}],
                   "lattice": {"kind": "fcc", "cells": cells, "density": 0.8442}},
        "force_field": {"pair": [{"potential": "lj", "cutoff": 2.5,
                                  "coeffs": [{"types": ["A", "A"], "epsilon": 1.0, "sigma": 1.0}]}]},
        "integrator": {"kind": "langevin", "dt": dt, "temperature": 1.2, "friction": 1.0, "seed": seed},
        "output": {"prefix": prefix, "thermo_every": thermo_every, "trajectory": {"every": trajectory_every}},
    }


LJ_YAML = """\
units: lj
steps: 200
system:
  types:
    - {name: A, mass: 1.0}
  lattice: {kind: fcc, cells: 4, density: 0.8442}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs:
        - {types: [A, A], epsilon: 1.0, sigma: 1.0}
integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 7}
output:
  thermo_every: 50
  trajectory: {every: 50}
"""


def read_csv(path):
    with open(path) as f:
        header = f.readline().strip().split(",")
        rows = [list(map(float, line.split(","))) for line in f if line.strip()]
    return header, np.array(rows)


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def test_module_basics():
    assert pairmd.__version__
    assert issubclass(pairmd.ConfigError, ValueError)
    assert issubclass(pairmd.SimulationError, RuntimeError)
    assert "pair_slots_fused" in pairmd.strategies()
    # A bool (a tuple would always be true); the reason or the GPU comes from cuda_status().
    assert type(pairmd.cuda_available()) is bool
    assert isinstance(pairmd.cuda_status(), str) and pairmd.cuda_status()


def test_config_error_carries_file_and_line(tmp_path):
    bad = LJ_YAML.replace("dt: 0.005", "dt: -1")
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    line = bad.splitlines().index(next(l for l in bad.splitlines() if "dt: -1" in l)) + 1
    with pytest.raises(pairmd.ConfigError) as e:
        pairmd.Simulation(str(path), backend="cpu", quiet=True)
    assert e.value.file == str(path)
    assert e.value.line == line
    assert "integrator.dt" in str(e.value)
    # The same message as `pairmd check` prints, exit code 2 there.
    if BINARY:
        cli = subprocess.run([BINARY, "check", str(path)], capture_output=True, text=True)
        assert cli.returncode == 2
        assert str(e.value) in cli.stderr
    # A dict: the key is named; an unknown key too.
    cfg = lj_config()
    cfg["integrator"]["dtt"] = 0.1
    with pytest.raises(pairmd.ConfigError, match="dtt"):
        pairmd.Simulation(cfg, backend="cpu", quiet=True)
    # Overrides are checked as --set is.
    with pytest.raises(pairmd.ConfigError, match="integrator.temperature"):
        pairmd.Simulation(lj_config(), overrides={"integrator.temperature": "hot"}, backend="cpu", quiet=True)
    # Text without output.prefix has no file name to name its outputs after.
    with pytest.raises(pairmd.ConfigError, match="output.prefix"):
        pairmd.Simulation(LJ_YAML, backend="cpu", quiet=True)


def test_replica_ensembles_are_refused(tmp_path):
    # Replica ensembles run with the pairmd program (docs/replicas.md); a Simulation runs one
    # system and must not quietly run one replica of an ensemble: the message names the program
    # and pairmd.Ensemble.
    cfg = lj_config()
    cfg["replicas"] = {"count": 2, "min_temperature": 1.2, "max_temperature": 1.5}
    with pytest.raises(pairmd.ConfigError, match="pairmd.Ensemble") as e:
        pairmd.Simulation(cfg, backend="cpu", quiet=True)
    assert "replicas" in str(e.value) and "pairmd run CONFIG" in str(e.value)
    assert not list(tmp_path.iterdir())  # nothing written
    cfg["replicas"] = {"mode": "independent", "count": 1}
    with pytest.raises(pairmd.ConfigError, match="mpirun"):
        pairmd.Simulation(cfg, backend="cpu", quiet=True)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_ensemble_copies_run_as_they_run_alone(backend):
    # Copy k of pairmd.Ensemble is the config run alone with copy k's seed and temperature, bit
    # for bit (docs/ensembles.md): positions, velocities, images, forces and energies.
    if backend == "cuda" and not HAVE_GPU:
        pytest.skip(f"no GPU: {NO_GPU_REASON}")
    cfg = lj_config(cells=4)
    ens = pairmd.Ensemble(cfg, temperatures=[0.9, 1.2, 1.6], seeds=[3, 11, 12], backend=backend)
    assert len(ens) == ens.copies == 3 and ens.particles == 256
    assert ens.positions.shape == (3, 256, 3) and ens.images.dtype == np.int32
    ens.run(150)
    assert ens.step == 150
    thermo = ens.thermo
    assert thermo["temperature"].shape == (3,)
    # Hotter copies are hotter (the thermostat acts per copy).
    assert thermo["kinetic_energy"][0] < thermo["kinetic_energy"][2]
    for k in range(3):
        sim = pairmd.Simulation(cfg, overrides={"integrator.seed": int(ens.seeds[k]),
                                                "integrator.temperature": float(ens.temperatures[k])},
                                backend=backend, output=None, quiet=True)
        sim.run(150)
        assert np.array_equal(sim.positions, ens.positions[k]), k
        assert np.array_equal(sim.velocities, ens.velocities[k]), k
        assert np.array_equal(sim.images, ens.images[k]), k
        assert np.array_equal(sim.forces, ens.forces[k]), k
        assert sim.thermo["potential_energy"] == thermo["potential_energy"][k]
        sim.close()


def test_ensemble_state_in_and_out():
    ens = pairmd.Ensemble(lj_config(cells=4), 2, backend="cpu")
    assert list(ens.seeds) == [7, 8]  # integrator.seed + k, as `pairmd run` seeds replicas
    assert list(ens.temperatures) == [1.2, 1.2]
    L = ens.box["lengths"][0]
    x = ens.positions
    x[1, 0] += [L + 0.25, 0, 0]  # one box length and a bit out: wrapped, the image counts it
    ens.positions = x
    assert np.allclose(ens.positions[1, 0, 0], x[1, 0, 0] - L)
    assert ens.images[1, 0, 0] == 1 and not ens.images[0].any()
    v = ens.velocities
    v[0] = 0.0
    ens.velocities = v
    assert ens.thermo["kinetic_energy"][0] == 0.0 and ens.thermo["kinetic_energy"][1] > 0
    ens.temperatures = [0.5, 2.0]
    ens.run(400)
    t = ens.thermo["temperature"]
    assert t[0] < 1.0 < t[1]
    # Forces on a copy are -dE/dx: a central difference on one coordinate.
    e0 = pairmd.Ensemble(lj_config(cells=4), 1, backend="cpu")
    f = e0.forces[0, 5, 1]
    h = 1e-5
    p = e0.positions
    p[0, 5, 1] += h
    e0.positions = p
    up = e0.thermo["potential_energy"][0]
    p[0, 5, 1] -= 2 * h
    e0.positions = p
    down = e0.thermo["potential_energy"][0]
    assert abs(-(up - down) / (2 * h) - f) < 1e-5 * max(1.0, abs(f))


@pytest.mark.parametrize("kwargs, error, message", [
    ({}, TypeError, r"copies: how many systems"),
    ({"copies": 0}, ValueError, r"Ensemble: copies: "),
    ({"copies": 2.5}, TypeError, r"Ensemble: copies: "),
    ({"copies": 2, "temperatures": [1.0]}, ValueError, r"temperatures: 1 given for 2 copies"),
    ({"temperatures": [1.0, -1.0]}, ValueError, r"temperatures\[1\]"),
    ({"temperatures": "hot"}, TypeError, r"temperatures: expected a sequence"),
    ({"seeds": [1, -2]}, ValueError, r"seeds\[1\]"),
    ({"copies": 2, "backend": "gpu9"}, pairmd.ConfigError, r"backend"),
])
def test_ensemble_arguments_are_checked(kwargs, error, message):
    with pytest.raises(error, match=message):
        pairmd.Ensemble(lj_config(cells=4), **kwargs)
    assert not os.listdir(".")  # an ensemble writes nothing


def test_ensemble_blow_up_names_the_copy():
    cfg = lj_config(cells=4, dt=0.5)
    with pytest.warns(UserWarning):
        ens = pairmd.Ensemble(cfg, 2, backend="cpu")
    with pytest.raises(pairmd.SimulationError, match="system") as e:
        ens.run(1000)
    assert e.value.outcome == "blew_up"


def test_file_string_dict_and_cli_give_the_same_run(tmp_path):
    (tmp_path / "lj.yaml").write_text(LJ_YAML)
    runs = {}
    for name, config, output in [("file", "lj.yaml", "f"), ("text", LJ_YAML, "t"), ("dict", lj_config(), "d")]:
        with pairmd.Simulation(config, backend="cpu", output=output, quiet=True) as sim:
            sim.run(100)
            runs[name] = sim.positions.copy()
            table = sim.thermo_table
        _, csv = read_csv(output + ".thermo.csv")
        # The thermo table is the CSV (steps 0, 50, 100; energies to the CSV's 15 digits).
        assert list(table["step"]) == [0, 50, 100]
        assert np.allclose(table["potential_energy"], csv[:, 3], rtol=1e-12)
    assert np.array_equal(runs["file"], runs["text"])
    assert np.array_equal(runs["file"], runs["dict"])
    if BINARY:
        subprocess.run([BINARY, "run", "lj.yaml", "--backend", "cpu", "--steps", "100", "--output", "cli"],
                       check=True, capture_output=True)
        _, cli = read_csv("cli.thermo.csv")
        _, py = read_csv("f.thermo.csv")
        # Same physics, row by row (the last column but the per-term energy is steps/s).
        assert np.array_equal(cli[:, :7], py[:, :7])


def test_run_callback_every_and_thermo():
    seen = []
    with pairmd.Simulation(lj_config(), backend="cpu", output=None, quiet=True) as sim:
        sim.run(60, callback=lambda s: seen.append((s.step, s.thermo["potential_energy"])), every=20)
        assert [s for s, _ in seen] == [20, 40, 60]
        assert sim.step == 60 and sim.time == pytest.approx(60 * 0.005)
        sim.run(15)
        assert sim.step == 75
        sim.run()  # to the config's steps (200)
        assert sim.step == 200
        t = sim.thermo
        # The temperature is 2 KE / (dof k_B), dof = 3N under a thermostat.
        assert t["temperature"] == pytest.approx(2 * t["kinetic_energy"] / (3 * len(sim)))
        assert t["total_energy"] == pytest.approx(t["potential_energy"] + t["kinetic_energy"])
        table = sim.thermo_table
        assert list(table["step"]) == [0, 50, 100, 150, 200]
        assert set(sim.thermo_units) >= {"time", "temperature", "pressure"}
        # Thermostatted at kT = 1.2: the last rows are near it (256 particles: ~5% fluctuations).
        assert 0.9 < np.mean(table["temperature"][2:]) < 1.5


def test_pieces_write_what_one_run_writes():
    # Observers see every step they asked for, whatever steps run() is called with.
    with pairmd.Simulation(lj_config(prefix="one", thermo_every=10), backend="cpu", quiet=True) as sim:
        sim.run(40)
    with pairmd.Simulation(lj_config(prefix="pieces", thermo_every=10), backend="cpu", quiet=True) as sim:
        for n in (1, 2, 7, 13, 17):
            sim.run(n)
    _, one = read_csv("one.thermo.csv")
    _, pieces = read_csv("pieces.thermo.csv")
    assert list(one[:, 0]) == [0, 10, 20, 30, 40]
    assert np.array_equal(one[:, :7], pieces[:, :7])  # all but steps/s


def test_state_arrays_and_analytic_forces():
    # Two particles in an open box: the force is the analytic LJ force, along the separation.
    cfg = {
        "units": "lj", "steps": 10,
        "system": {"types": [{"name": "A"}], "boundary": "open",
                   "lattice": {"kind": "sc", "cells": [2, 1, 1], "density": 0.1}},
        "force_field": {"pair": [{"potential": "lj", "cutoff": 3.0,
                                  "coeffs": [{"types": ["A", "A"], "epsilon": 1.0, "sigma": 1.0}]}]},
        "integrator": {"kind": "nve", "dt": 0.001},
    }
    with pairmd.Simulation(cfg, backend="cpu", output=None, quiet=True) as sim:
        assert sim.positions.shape == (2, 3) and sim.positions.dtype == np.float64
        assert sim.images.dtype == np.int32 and sim.types.dtype == np.int32
        assert list(sim.type_names) == ["A"] and list(sim.types) == [0, 0]
        x = np.array([[0.0, 0.0, 0.0], [1.3, 0.4, -0.2]])
        sim.positions = x
        assert np.array_equal(sim.positions, x)
        r = np.linalg.norm(x[1] - x[0])
        f_over_r = 24 * (2 * r**-12 - r**-6) / r**2  # -(1/r) dV/dr for eps = sigma = 1
        f = sim.forces
        assert np.allclose(f[1], f_over_r * (x[1] - x[0]), rtol=1e-12)
        assert np.allclose(f[0], -f[1], rtol=1e-12)
        v = np.array([[0.5, 0.0, 0.0], [-0.5, 0.1, 0.0]])
        sim.velocities = v
        assert sim.thermo["kinetic_energy"] == pytest.approx(0.5 * np.sum(sim.masses[:, None] * v**2))
        with pytest.raises(ValueError, match="shape"):
            sim.positions = np.zeros((3, 3))
        with pytest.raises(ValueError, match="finite"):
            sim.velocities = np.full((2, 3), np.nan)


def test_positions_set_outside_the_box_are_wrapped_with_images():
    with pairmd.Simulation(lj_config(cells=4), backend="cpu", output=None, quiet=True) as sim:
        L = sim.box["lengths"]
        lo = sim.box["lo"]
        unwrapped = sim.positions + sim.images * L
        moved = unwrapped.copy()
        moved[0] += 2.5 * L  # two and a half boxes away
        sim.positions = moved
        assert np.all(sim.positions >= lo) and np.all(sim.positions < lo + L)
        assert np.allclose(sim.positions + sim.images * L, moved)
        assert list(sim.dimensions[3:]) == [90, 90, 90]


def test_positions_whose_image_would_overflow_are_refused():
    with pairmd.Simulation(lj_config(cells=4), backend="cpu", output=None, quiet=True) as sim:
        L = sim.box["lengths"]
        before = sim.positions.copy(), sim.images.copy()
        far = sim.positions.copy()
        far[3, 1] = 1e12  # ~1.5e11 boxes away: the int32 image cannot count that
        with pytest.raises(ValueError, match=r"particle 3: y = 1e\+12 .*image count would overflow"):
            sim.positions = far
        assert np.array_equal(sim.positions, before[0]) and np.array_equal(sim.images, before[1])  # unchanged
        # As far as the counter goes: accepted, the unwrapped position kept.
        far[3, 1] = 1e9
        sim.positions = far
        assert sim.images[3, 1] == np.floor((1e9 - sim.box["lo"][1]) / L[1]) + before[1][3, 1]
        assert (sim.positions + sim.images * L)[3, 1] == pytest.approx(1e9, rel=1e-12)


def test_checkpoint_restart_is_bitwise():
    with pairmd.Simulation(lj_config(prefix="a"), backend="cpu", quiet=True) as sim:
        sim.run(100)
        ck = sim.write_checkpoint("mid.checkpoint.h5")
        sim.run(50)
        after = sim.positions.copy(), sim.velocities.copy()
    with pairmd.Simulation(restart=ck, backend="cpu", output=None, quiet=True) as again:
        assert again.step == 100
        again.run(50)
        assert np.array_equal(again.positions, after[0])
        assert np.array_equal(again.velocities, after[1])


def test_output_rules_as_the_cli():
    first = pairmd.Simulation(lj_config(prefix="p"), backend="cpu", quiet=True)
    with pytest.raises(pairmd.ConfigError, match="in use"):
        pairmd.Simulation(lj_config(prefix="p"), backend="cpu", quiet=True)
    first.run(10)
    first.close()
    assert first.closed and first.step == 10
    with pytest.raises(RuntimeError, match="closed"):
        first.run(1)
    with pytest.raises(pairmd.ConfigError, match="overwrite=True"):
        pairmd.Simulation(lj_config(prefix="p"), backend="cpu", quiet=True)
    with pairmd.Simulation(lj_config(prefix="p"), backend="cpu", overwrite=True, quiet=True) as sim:
        sim.run(5)
        assert os.path.exists(sim.files["log"])


def test_blow_up_raises_and_keeps_the_last_good_state():
    cfg = lj_config(dt=0.5, thermo_every=1)
    with pytest.warns(UserWarning, match="integrator.dt 0.5 tau is large"):  # as `pairmd run` warns
        sim = pairmd.Simulation(cfg, backend="cpu", output=None, quiet=True)
    with sim:
        with pytest.raises(pairmd.SimulationError) as e:
            sim.run(1000)
        assert e.value.outcome == "blew_up"
        assert sim.closed and sim.step == e.value.step
        assert np.all(np.isfinite(sim.positions))


def test_gil_is_released_while_running():
    with pairmd.Simulation(lj_config(cells=5), backend="cpu", output=None, quiet=True) as sim:
        counts = []
        stop = threading.Event()

        def count():
            n = 0
            while not stop.is_set():
                n += 1
                time.sleep(0.001)
            counts.append(n)

        t = threading.Thread(target=count)
        t.start()
        t0 = time.perf_counter()
        sim.run(3000)  # one call: the GIL is not given back between calls
        elapsed = time.perf_counter() - t0
        stop.set()
        t.join()
        # With the GIL held for the whole run the thread would count (almost) nothing; free, it
        # counts about one per millisecond (sleep(0.001) lasts a little longer).
        assert counts[0] > 0.2 * elapsed / 0.001


class StopRun(Exception):
    pass


def test_one_simulation_takes_one_call_at_a_time():
    """A run releases the GIL: a call from another thread on the same simulation meanwhile is
    refused with a RuntimeError naming the run (it used to crash the interpreter)."""
    sim = pairmd.Simulation(lj_config(prefix="busy", cells=5, thermo_every=10), backend="cpu", quiet=True)
    started, stop, errors = threading.Event(), threading.Event(), []

    def callback(s):
        s.positions  # the run's own thread may read the state in its callback
        started.set()
        if stop.is_set():
            raise StopRun()

    def go():
        try:
            sim.run(10**6, callback=callback, every=10)
        except StopRun:
            pass
        except BaseException as e:  # anything else fails the test below
            errors.append(e)

    t = threading.Thread(target=go)
    t.start()
    assert started.wait(60)
    try:
        x = np.zeros((len(sim), 3))
        attempts = {
            "run": lambda: sim.run(10),
            "positions": lambda: sim.positions,
            "velocities": lambda: sim.velocities,
            "forces": lambda: sim.forces,
            "images": lambda: sim.images,
            "types": lambda: sim.types,
            "thermo": lambda: sim.thermo,
            "thermo_table": lambda: sim.thermo_table,
            "step": lambda: sim.step,
            "write_checkpoint": lambda: sim.write_checkpoint("refused.checkpoint.h5"),
            "close": lambda: sim.close(),
            "positions ": lambda: setattr(sim, "positions", x),
            "velocities ": lambda: setattr(sim, "velocities", x),
            "state": lambda: pairmd.potential_map(sim, spacing=1.0, kernel="cpu"),
        }
        for name, attempt in attempts.items():
            with pytest.raises(RuntimeError, match=r"\.%s: refused: run\(1000000\) is running on this simulation "
                               r"in another thread" % name.strip()):
                attempt()
        assert "busy: run(1000000) in another thread" in repr(sim)
        assert not sim.closed
        # Another simulation runs meanwhile.
        with pairmd.Simulation(lj_config(prefix="other", cells=4), backend="cpu", quiet=True) as other:
            other.run(50)
            assert other.step == 50
    finally:
        stop.set()
        t.join(60)
    assert not errors, errors
    # The refused calls changed nothing: the run goes on, and the simulation closes as usual.
    step = sim.step
    assert step >= 10 and step % 10 == 0
    sim.run(10)
    assert sim.step == step + 10
    sim.close()
    assert not os.path.exists("refused.checkpoint.h5")


def test_simulations_run_concurrently_in_threads():
    # Each simulation in its own thread, with its own files: the same numbers as one at a time.
    def one(prefix, out):
        with pairmd.Simulation(lj_config(prefix=prefix, cells=4, seed=11), backend="cpu", quiet=True) as sim:
            sim.run(300)
            out[prefix] = sim.positions.copy()

    alone, together = {}, {}
    one("alone", alone)
    threads = [threading.Thread(target=one, args=(p, together)) for p in ("t1", "t2", "t3")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert sorted(together) == ["t1", "t2", "t3"]
    for p in together:
        assert np.array_equal(together[p], alone["alone"])
        _, rows = read_csv(p + ".thermo.csv")
        assert list(rows[:, 0]) == [0, 50, 100, 150, 200, 250, 300]


@pytest.mark.parametrize("call, error, message", [
    (lambda s: s.run(1.5), TypeError, r"run: steps: expected an int in \[0, 8999999999999997\], got 1.5 \(float\)"),
    (lambda s: s.run("10"), TypeError, r"run: steps: expected an int .*got '10' \(str\)"),
    (lambda s: s.run(True), TypeError, r"run: steps: .*got True \(bool\)"),
    (lambda s: s.run(10**30), ValueError, r"run: steps: expected an int in \[0, 8999999999999997\], got 1000000000000000000000000000000 \(int\) \(the step counter goes up to 9000000000000000; the simulation is at step 3\)"),
    (lambda s: s.run(2**63 - 1), ValueError, r"run: steps: .*the step counter goes up to 9000000000000000"),
    (lambda s: s.run(-1), ValueError, r"run: steps: expected an int in \[0, "),
    (lambda s: s.run(1, every=2.0), TypeError, r"run: every: expected an int in \[0, 9000000000000000\], got 2.0 \(float\)"),
    (lambda s: s.run(1, every=-1), ValueError, r"run: every: "),
    (lambda s: s.run(1, callback=5), TypeError, r"run: callback: expected a callable or None, got 5 \(int\)"),
    (lambda s: s.write_checkpoint(5), TypeError, r"write_checkpoint: path: expected a path"),
    (lambda s: pairmd.Simulation(lj_config(), backend=5), TypeError, r"backend: expected a str"),
    (lambda s: pairmd.Simulation(lj_config(), strategy=None), TypeError, r"strategy: expected a str"),
    (lambda s: pairmd.Simulation(lj_config(), overwrite="no"), TypeError, r"overwrite: expected True or False"),
    (lambda s: pairmd.Simulation(lj_config(), quiet=1), TypeError, r"quiet: expected True or False"),
    (lambda s: pairmd.Simulation(lj_config(), output=5), TypeError, r"output: expected a path"),
    (lambda s: pairmd.Simulation(restart=5), TypeError, r"restart: expected a path"),
    (lambda s: pairmd.Simulation(5), TypeError, r"config: expected a path, YAML text or a dict"),
    (lambda s: pairmd.Simulation(lj_config(), overrides=5), TypeError, r"overrides: expected a dict"),
    (lambda s: pairmd.Simulation(lj_config(), overrides={"integrator.seed": 1.5}, quiet=True), pairmd.ConfigError,
     r"integrator.seed: expected an integer"),
    (lambda s: pairmd.Simulation(lj_config(), overrides={"integrator.seed": 2**70}, quiet=True), pairmd.ConfigError,
     r"integrator.seed: expected an integer"),
    (lambda s: pairmd.Simulation(lj_config(), overrides={"integrator.temperature": float("nan")}, quiet=True),
     pairmd.ConfigError, r"integrator.temperature: expected a temperature"),
    (lambda s: pairmd.compare(lj_config(), strategies=["cpu"], steps=1.5), TypeError, r"compare: steps: expected an int"),
    (lambda s: pairmd.compare(lj_config(), strategies=["cpu"], repeats="2"), TypeError, r"compare: repeats: "),
    (lambda s: pairmd.compare(lj_config(), strategies=["cpu"], warmup=-1), ValueError, r"compare: warmup: "),
    (lambda s: pairmd.compare(lj_config(), strategies=5), TypeError, r"compare: strategies: expected a str or a list"),
    (lambda s: pairmd.compare(lj_config(), strategies=["cpu"], sizes=[1.5]), TypeError, r"compare: sizes\[0\]: "),
    (lambda s: pairmd.compare(lj_config(), strategies=["cpu"], reference=1), TypeError, r"compare: reference: "),
    (lambda s: pairmd.potential_map(s, spacing="1"), TypeError, r"potential_map: spacing: expected a number > 0"),
    (lambda s: pairmd.potential_map(s, spacing=float("nan")), ValueError, r"potential_map: spacing: expected a number"),
    (lambda s: pairmd.potential_map(s, padding=-1), ValueError, r"potential_map: padding: expected a number >= 0"),
    (lambda s: pairmd.potential_map(s, min_distance=[1]), TypeError, r"potential_map: min_distance: "),
    (lambda s: pairmd.potential_map(s, kernel=1), TypeError, r"potential_map: kernel: expected a str"),
    (lambda s: pairmd.potential_map("q.h5", frames=0, units="lj"), TypeError, r"potential_map: frames: expected a str"),
    (lambda s: pairmd.potential_map("q.h5", units=None), TypeError, r"potential_map: units: expected a str"),
    # Values out of an option's choices, in the words of the rule the command line checks them by
    # (session/options.h; tests/test_options.cpp): the same checks, named as Python names them.
    (lambda s: pairmd.potential_map(s, kernel="fastest"), ValueError,
     r"potential_map: kernel: expected one of: auto, cpu, scatter, .*; got 'fastest'"),
    (lambda s: pairmd.potential_map(s, region="sphere"), ValueError,
     r"potential_map: region: expected box or particles, got 'sphere'"),
    (lambda s: pairmd.potential_map(s, units="si"), ValueError, r"potential_map: units: expected lj or real, got 'si'"),
    (lambda s: pairmd.Simulation(lj_config(), backend="gpu"), pairmd.ConfigError,
     r"Simulation: backend: expected one of: auto, cpu, cuda; got 'gpu'"),
    (lambda s: pairmd.Simulation(lj_config(), strategy="fastest"), pairmd.ConfigError,
     r"Simulation: strategy: expected one of: .*, auto; got 'fastest'"),
    (lambda s: pairmd.compare(lj_config(), strategies=["nope"]), ValueError,
     r"compare: strategies: expected one of: .*, cpu; got 'nope'"),
    (lambda s: pairmd.compare(lj_config(), strategies=["cpu"], sizes=[0]), ValueError, r"compare: sizes\[0\]: "),
])
def test_arguments_are_checked(call, error, message):
    # Every public argument: the wrong type is a TypeError, a value out of range a ValueError, each
    # naming the argument and the value (not pybind11's "Unable to cast" or "incompatible arguments").
    with pairmd.Simulation(lj_config(cells=4), backend="cpu", output=None, quiet=True) as sim:
        sim.run(3)
        with pytest.raises(error, match=message):
            call(sim)
        assert sim.step == 3  # nothing happened
        assert not os.listdir(".")  # nothing written


def test_numpy_numbers_are_arguments():
    with pairmd.Simulation(lj_config(cells=4), backend="cpu", output=None, quiet=True) as sim:
        sim.run(np.int64(2), callback=lambda s: None, every=np.int32(1))
        assert sim.step == 2
        m = pairmd.potential_map(sim, spacing=np.float32(1.0), padding=np.int64(1), kernel="cpu")
        assert m["spacing"][0] == 1.0


CTRL_C_SCRIPT = """
import sys
sys.path.insert(0, {path!r})
import pairmd
sim = pairmd.Simulation({cfg!r}, backend="cpu", quiet=True)
print("started", flush=True)
sim.run(10**9)
"""


def test_ctrl_c_stops_cleanly_with_outputs_flushed(tmp_path):
    cfg = lj_config(prefix="c", cells=5, thermo_every=10, trajectory_every=10)
    cfg["output"]["trajectory"]["flush_seconds"] = 1000  # flushed by the interruption, not the clock
    script = CTRL_C_SCRIPT.format(path=os.path.dirname(pairmd.__file__), cfg=cfg)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.strip() == "started":
            break
    time.sleep(3.0)  # well into the run
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert "KeyboardInterrupt" in err, err
    assert p.returncode != 0
    with open("c.log") as f:
        log = f.read()
    assert "interrupted (KeyboardInterrupt at step" in log
    assert "checkpoint written to c.checkpoint.h5" in log
    step = int(log.split("KeyboardInterrupt at step ")[1].split(")")[0])
    assert step > 0
    # The CSV has its rows up to the step, each complete; the checkpoint holds the step.
    header, rows = read_csv("c.thermo.csv")
    assert rows.shape[1] == len(header)
    assert rows[-1, 0] <= step
    with pairmd.Simulation(restart="c.checkpoint.h5", output=None, quiet=True) as again:
        assert again.step == step
    # The trajectory was flushed: every frame up to the step is there (h5py, where it is installed).
    try:
        import h5py
    except ImportError:
        return
    with h5py.File("c.h5", "r") as f:
        steps = f["particles/all/position/step"][:]
        assert steps[-1] == (step // 10) * 10


def test_compare_on_the_cpu():
    d = pairmd.compare(lj_config(cells=4), strategies=["cpu"], steps=20, repeats=2, warmup=10)
    assert list(d["strategy"]) == ["cpu"]
    assert d["n"][0] == 256
    assert d["timesteps_per_s"][0] > 0
    assert d["max_force_err_rel"][0] == 0.0  # the reference against itself
    assert d["bitwise_reproducible"][0] is True
    with pytest.raises(ValueError, match="strategies"):
        pairmd.compare(lj_config(cells=4), strategies=["nope"], steps=20)
    if not HAVE_GPU:
        with pytest.raises(ValueError, match="needs a GPU"):
            pairmd.compare(lj_config(cells=4), strategies=["pair_slots_fused"], steps=20)


def charged_pair_config():
    return {
        "units": "lj", "steps": 10,
        "system": {"types": [{"name": "P", "charge": 1.0}], "boundary": "open",
                   "lattice": {"kind": "sc", "cells": [2, 1, 1], "density": 0.05}},
        "force_field": {"pair": [{"potential": "lj", "cutoff": 2.5,
                                  "coeffs": [{"types": ["P", "P"], "epsilon": 1.0, "sigma": 1.0}]}]},
        "integrator": {"kind": "nve", "dt": 0.001},
    }


def potential_at(m, point):
    idx = np.rint((np.asarray(point) - m["origin"]) / m["spacing"]).astype(int)
    return m["values"][tuple(idx)], m["origin"] + idx * m["spacing"]


@pytest.mark.parametrize("kernel", ["cpu", "auto"])
def test_potential_map_is_coulomb(kernel):
    with pairmd.Simulation(charged_pair_config(), backend="cpu", output=None, quiet=True) as sim:
        sim.positions = np.array([[1.0, 1.0, 1.0], [3.0, 1.0, 1.0]])
        q = sim.charges
        m = pairmd.potential_map(sim, spacing=0.25, region="particles", padding=2.0, kernel=kernel)
        assert m["values"].shape == tuple(
            int(np.ceil((2 * 2.0 + e) / 0.25 - 1e-9)) + 1 for e in (2.0, 0.0, 0.0))
        assert m["frames"] == 1
        v, p = potential_at(m, [2.0, 2.0, 1.5])
        x = sim.positions
        expect = sum(q[i] / np.linalg.norm(p - x[i]) for i in range(2))  # k_e = 1 in lj units
        tol = 1e-12 if m["kernel"] == "cpu" else 1e-5
        assert v == pytest.approx(expect, rel=tol, abs=tol)


def test_potential_map_of_a_trajectory(tmp_path):
    cfg = charged_pair_config()
    cfg["output"] = {"prefix": "q", "trajectory": {"every": 5}}
    with pairmd.Simulation(cfg, backend="cpu", quiet=True) as sim:
        sim.run(10)
    m = pairmd.potential_map("q.h5", units="lj", spacing=0.5, kernel="cpu", frames="0:")
    assert m["frames"] == 3
    with pytest.raises(ValueError, match="units"):
        pairmd.potential_map("q.h5", spacing=0.5)


@pytest.mark.skipif(not HAVE_GPU, reason="no GPU: " + NO_GPU_REASON)
def test_gpu_state_is_in_the_users_order():
    # The CUDA backend keeps particles in cell order; what Python sees is the order they were made.
    cfg = lj_config(cells=6)
    with pairmd.Simulation(cfg, backend="cpu", output=None, quiet=True) as cpu, \
            pairmd.Simulation(cfg, backend="cuda", output=None, quiet=True) as gpu:
        assert gpu.backend.startswith("cuda")  # "cuda:<strategy>"
        # The same particle in the same row; the GPU holds positions in float (~1e-6 relative).
        assert np.allclose(cpu.positions, gpu.positions, rtol=0, atol=1e-5)
        assert np.array_equal(cpu.types, gpu.types)
        # Off the lattice (a perfect lattice has zero net forces), the same positions in both.
        shaken = cpu.positions + np.random.default_rng(7).normal(scale=0.05, size=cpu.positions.shape)
        cpu.positions = shaken
        gpu.positions = shaken
        scale = np.sqrt(np.mean(np.sum(cpu.forces**2, axis=1)))
        assert scale > 1.0
        # fp32 against fp64: the bound of the C++ GPU tests (tests/test_gpu_backend.cpp, kMaxForceErr).
        assert np.max(np.linalg.norm(cpu.forces - gpu.forces, axis=1)) < 2e-3 * scale
        rng = np.random.default_rng(1)
        x = gpu.positions
        perm = rng.permutation(len(gpu))
        x2 = x.copy()
        x2[perm[:10]] += 0.01
        gpu.positions = x2
        assert np.allclose(gpu.positions, x2, rtol=0, atol=1e-5)  # read back from float
        gpu.run(200)
        assert np.all(np.isfinite(gpu.positions))
        assert 0.9 < gpu.thermo["temperature"] < 1.5


@pytest.mark.skipif(not HAVE_GPU, reason="no GPU: " + NO_GPU_REASON)
def test_compare_and_map_on_the_gpu():
    d = pairmd.compare(lj_config(cells=6), strategies=["pair_slots_fused", "atom_gather"], steps=50, repeats=2,
                       warmup=50)
    assert list(d["strategy"]) == ["pair_slots_fused", "atom_gather"]
    # fp32 forces against the fp64 reference: the C++ GPU tests' bounds (max 2e-3, rms 2e-4).
    assert np.all(d["max_force_err_rel"] < 2e-3)
    assert np.all(d["rms_force_err_rel"] < 2e-4)
    assert d["bitwise_reproducible"][0] is True
    with pairmd.Simulation(charged_pair_config(), backend="cuda", output=None, quiet=True) as sim:
        cpu = pairmd.potential_map(sim, spacing=0.25, kernel="cpu")
        gpu = pairmd.potential_map(sim, spacing=0.25, kernel="auto")
        assert gpu["kernel"] != "cpu"
        assert np.allclose(gpu["values"], cpu["values"], rtol=1e-4, atol=1e-5 * np.max(np.abs(cpu["values"])))


def test_worked_example_runs(tmp_path):
    """docs/python.md's example, on a small system (matplotlib writes a PNG, MDAnalysis the RDF)."""
    pytest.importorskip("MDAnalysis")
    pytest.importorskip("matplotlib")
    example = os.path.join(SOURCE_DIR, "examples", "python", "lj_rdf.py")
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, example, "--cells", "5", "--steps", "500", "--frames", "10", "--every", "50",
                        "--backend", "cpu", "--out", str(tmp_path / "rdf.png")],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "rdf.png").stat().st_size > 1000
    # The first peak of the LJ liquid's g(r) at rho 0.8442, kT 1.2: near r = 1.1 sigma, height ~2.5-3.
    peak = [l for l in r.stdout.splitlines() if l.startswith("first peak")][0].split()
    r_peak, g_peak = float(peak[2]), float(peak[3])
    assert 1.0 < r_peak < 1.2
    assert 2.0 < g_peak < 3.5
