"""Reads a trajectory left by a killed `pairmd run` as users' tools do (tests/test_kill_loop.cpp).

    check_killed_trajectory.py h5md|gsd PATH MIN_FRAMES EVERY

H5MD with h5py: every time series (a group with step and value) reads whole; step and time hold
at least as many entries as value; steps rise; positions are finite and no position frame is all
zero (a frame whose extent was written before its data); position frame k is step k * EVERY, and
there are at least MIN_FRAMES of them. GSD with Debian's gsd (2.7): every frame reads, frame k is
step k * EVERY and holds every chunk pairmd writes per frame (not frame 0's by the schema's
fallback; the last frame, when it is past the MIN_FRAMES flushed ones, may lack some: the flush
that was cut), positions are finite, at least MIN_FRAMES frames.

Exit 0 when all holds, 1 with the first thing that does not, 77 when the module is missing.
"""
import sys

try:
    import numpy as np
except ImportError:  # main() says so and exits 77
    np = None


def series(group, prefix=""):
    import h5py

    for name, item in group.items():
        if not isinstance(item, h5py.Group):
            continue
        if "value" in item and "step" in item:
            yield prefix + name, item
        else:
            yield from series(item, prefix + name + "/")


def check_h5md(path, min_frames, every):
    import h5py

    with h5py.File(path, "r") as f:
        frames = 0
        for name, g in series(f):
            value = g["value"][...]
            step = g["step"][...]
            n = len(value)
            if len(step) < n:
                return f"{name}: step has {len(step)} entries for {n} frames"
            if "time" in g and len(g["time"][...]) < n:
                return f"{name}: time has fewer entries than the {n} frames"
            if n > 1 and not np.all(np.diff(step[:n]) > 0):
                return f"{name}: steps do not rise: {step[:n]}"
            if not np.all(np.isfinite(value)):
                return f"{name}: a value is not finite"
            if name == "particles/all/position":
                frames = n
                for k in range(n):
                    if not np.any(value[k] != 0):
                        return f"{name}: frame {k} of {n} is all zero"
                if not np.array_equal(step[:n], every * np.arange(n)):
                    return f"{name}: steps {step[:n]} are not 0, {every}, ..."
        if frames < min_frames:
            return f"the file holds {frames} position frames, {min_frames} were flushed"
    return None


# The chunks pairmd writes in every GSD frame: a frame that lacks one would be read with frame 0's
# (the schema's fallback), so each must be in the frame's own index.
GSD_FRAME_CHUNKS = ["configuration/step", "configuration/box", "particles/position", "particles/image",
                    "particles/velocity", "log/time", "log/potential_energy", "log/temperature", "log/pressure"]


def check_gsd(path, min_frames, every):
    import gsd.fl
    import gsd.hoomd

    with gsd.fl.open(path, "rb") as f:
        for k in range(f.nframes):
            # The frame a cut flush was indexing may show only its first chunks (GSD's index
            # write is cut at a page boundary; docs/output.md): never a flushed one.
            if k == f.nframes - 1 and k >= min_frames:
                continue
            for name in GSD_FRAME_CHUNKS:
                if not f.chunk_exists(k, name):
                    return f"frame {k} of {f.nframes} lacks {name}"
    with gsd.hoomd.open(path, "rb") as t:
        n = len(t)
        for k in range(n):
            frame = t[k]
            if int(frame.configuration.step) != every * k:
                return f"frame {k} is step {frame.configuration.step}, expected {every * k}"
            if frame.particles.position is None or not np.all(np.isfinite(frame.particles.position)):
                return f"frame {k} has no finite positions"
        if n < min_frames:
            return f"the file holds {n} frames, {min_frames} were flushed"
    return None


def main():
    kind, path, min_frames, every = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    try:
        if np is None:
            import numpy  # noqa: F401 (raises the ImportError reported below)
        if kind == "h5md":
            import h5py  # noqa: F401
        else:
            import gsd.hoomd  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e}")
        return 77
    try:
        problem = (check_h5md if kind == "h5md" else check_gsd)(path, min_frames, every)
    except Exception as e:  # a file that does not read is the failure this script looks for
        problem = f"{type(e).__name__}: {e}"
    if problem:
        print(f"{path}: {problem}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
