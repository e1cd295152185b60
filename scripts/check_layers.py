#!/usr/bin/env python3
"""The floors of pairmd's house, and a check that every #include goes down (or stays home).

    python3 scripts/check_layers.py [--dot] [ROOT]

Each source folder sits on one floor; a file may include headers of its own folder and of any
lower floor, never of a higher floor or of another folder on its own floor. Host code above the
CUDA floors never includes a CUDA header. The check prints the folder graph (edges with the
number of includes), names every include that breaks a rule, and exits 1 if there is one.
--dot prints the graph in Graphviz form instead (dot -Tsvg > layers.svg).
ctest runs it as `layers` (tests/CMakeLists.txt); docs/extending.md explains the floors.
"""
import os
import re
import sys

# Bottom to top. Subfolders belong to their top folder (kernels/dcs is kernels).
FLOORS = [
    ("base",),                                   # vec3, box, units, hd.h, state, topology, grid
    ("cuda",),                                   # CUDA helpers: error check, buffers, device query
    ("potentials", "integrators", "neighbor"),   # physics and algorithms for both backends
    ("backends",),                               # the backend interface, model, CPU reference
    ("kernels",),                                # the CUDA backend and the potential-map kernels
    ("engine",),                                 # config, system builder, run loop, observers
    ("io",),                                     # file formats: H5MD, checkpoints, thermo, .dx, svg
    ("analysis",),                               # potential maps, ion placement
    ("session",),                                # what the front ends share: runs, compare, maps
    # Replica ensembles drive runs that session/ prepares (plan, claim, outputs) through the
    # engine's Simulation in parts, and write their own files through io/ (walk plot), so they
    # sit above session/. Not below it: the Python module links session/ and must not carry MPI
    # (the device bundle's module would need libmpi at import). Only cli/ (run, demux) uses them.
    ("replicas",),                               # replica exchange, MPI communicator, ensemble driver
    ("cli", "python"),                           # the pairmd program; the Python module (python/module)
]
# On top of everything, and checked for nothing but CUDA headers: tests and benchmarks.
TOP = ("tests", "bench")

# Where CUDA headers may be included (the rest of the host code compiles without the toolkit).
CUDA_ALLOWED = ("cuda/", "kernels/", "neighbor/gpu_", "tests/test_gpu_", "tests/test_dcs_gpu", "tests/test_msm_gpu")
CUDA_HEADER = re.compile(r'#\s*include\s*[<"]((cuda|cub|thrust|curand)[^>"]*|[^>"]*\.cuh)[>"]')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCE = (".h", ".hpp", ".cpp", ".cu", ".cuh", ".c")

FLOOR_OF = {folder: k for k, folders in enumerate(FLOORS) for folder in folders}


def sources(root):
    for top in list(FLOOR_OF) + list(TOP):
        base = os.path.join(root, top)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if f.endswith(SOURCE):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def main(argv):
    dot = "--dot" in argv
    args = [a for a in argv if a != "--dot"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    edges, problems = {}, []
    for path in sources(root):
        folder = path.split(os.sep)[0]
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        if not path.endswith((".cu", ".cuh")) and not path.startswith(CUDA_ALLOWED):
            for m in CUDA_HEADER.finditer(text):
                problems.append(f"{path}: includes the CUDA header {m.group(1)} (only cuda/, kernels/ and neighbor/gpu_* may)")
        if folder in TOP:
            continue
        for target in INCLUDE.findall(text):
            to = target.split("/")[0]
            if to not in FLOOR_OF or "/" not in target or to == folder:
                continue
            edges[(folder, to)] = edges.get((folder, to), 0) + 1
            if FLOOR_OF[to] > FLOOR_OF[folder]:
                problems.append(f"{path}: includes {target}: {to}/ is above {folder}/")
            elif FLOOR_OF[to] == FLOOR_OF[folder]:
                problems.append(f"{path}: includes {target}: {to}/ and {folder}/ are on the same floor")
    if dot:
        print("digraph pairmd {\n  rankdir=BT;\n  node [shape=box];")
        for k, folders in enumerate(FLOORS):
            print("  { rank=same; " + " ".join(f'"{f}";' for f in folders) + " }")
        for (a, b), n in sorted(edges.items()):
            bad = FLOOR_OF[b] >= FLOOR_OF[a]
            print(f'  "{a}" -> "{b}" [label="{n}"{", color=red" if bad else ""}];')
        print("}")
    else:
        print("floors, bottom to top: " + " | ".join(" ".join(f) for f in FLOORS))
        for (a, b), n in sorted(edges.items(), key=lambda e: (-FLOOR_OF[e[0][0]], FLOOR_OF[e[0][1]])):
            print(f"  {a:12s} -> {b:12s} {n:3d} include(s)")
    for p in problems:
        print("layers: " + p, file=sys.stderr)
    if problems:
        print(f"layers: {len(problems)} include(s) break the floors (docs/extending.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
