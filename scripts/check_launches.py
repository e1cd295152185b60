#!/usr/bin/env python3
"""Every piece of GPU work of the CUDA backend goes through cuda/launcher.cuh.

    python3 scripts/check_launches.py [ROOT]

The backend replays cached CUDA graphs while the key of the work due equals the key the graph
was captured from (kernels/step_graphs.cuh). The launcher writes that key: a kernel launched with
<<<...>>>, a cudaMemsetAsync or cudaMemcpyAsync, or a CUB algorithm called on a stream anywhere
else would be missing from it, and a graph holding its old arguments could be replayed. This
check fails on any of them in kernels/ and neighbor/ (the potential-map kernels in kernels/dcs/
launch no graphs and are left out) outside the launcher itself. ctest runs it as `launches`.
"""
import os
import re
import sys

WORK = re.compile(r"<<<|\bcudaMemsetAsync\s*\(|\bcudaMemcpyAsync\s*\(|\bcub::Device\w+::\w+\s*\(")
# CUB's size queries pass a null scratch pointer and launch nothing.
SIZE_QUERY = re.compile(r"cub::Device\w+::\w+\s*\(\s*nullptr")
CUB = re.compile(r"\bcub::Device")
# A CUB algorithm is issued by the launcher when it is the body of a Launcher::call (a few
# lines below the `.call(` that hands it over with its key).
CALL = re.compile(r"\.call\s*\(")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    bad = []
    for folder in ("kernels", "neighbor"):
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            rel_dir = os.path.relpath(dirpath, root)
            if rel_dir.startswith(os.path.join("kernels", "dcs")):
                continue
            for f in sorted(files):
                if not f.endswith((".cu", ".cuh", ".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    lines = strip_comments(fh.read()).split("\n")
                for n, line in enumerate(lines, 1):
                    if CUB.search(line) and any(CALL.search(l) for l in lines[max(0, n - 6) : n]):
                        continue
                    if WORK.search(line) and not SIZE_QUERY.search(line):
                        bad.append(f"{os.path.relpath(path, root)}:{n}: {line.strip()}")
    if bad:
        print("GPU work outside cuda/launcher.cuh (it would be missing from the graphs' keys):")
        print("\n".join(bad))
        return 1
    print("check_launches: every launch, memset, copy and CUB call goes through the launcher")
    return 0


if __name__ == "__main__":
    sys.exit(main())
