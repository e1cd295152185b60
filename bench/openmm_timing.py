"""How the OpenMM benchmarks (openmm_lj.py, openmm_semiflexible.py, openmm_pme.py) time a context,
as `pairmd compare` times pairmd: the warm-up steps, then `repeats` runs of `steps` steps, each
ended by a state download (which waits for the GPU); the median and the repeats' spread."""
import statistics
import time


def time_steps(context, integrator, steps):
    t0 = time.perf_counter()
    integrator.step(steps)
    context.getState(getPositions=True)  # waits for the GPU
    return time.perf_counter() - t0


def steady_state_timing(context, integrator, warmup, steps, repeats):
    """Seconds per step (the median repeat) and the repeats' spread, (max - min) / median."""
    integrator.step(warmup)
    times = [time_steps(context, integrator, steps) for _ in range(repeats)]
    med = statistics.median(times)
    return med / steps, (max(times) - min(times)) / med
