#!/usr/bin/env python3
"""scripts/find_twins.py finds twins and only twins.

usage: check_find_twins.py SOURCE_DIR

On tests/data/twins/twin (a spec and its settings with the same fields but for one each, as
PotentialMapSpec and MapSettings were; two structs with the same names exactly) it must exit 1
and name both pairs; on tests/data/twins/apart (structs that share a few fields, enums, member
functions, function members) it must exit 0. Exit 0 when both hold, 1 with what went wrong.
"""
import os
import subprocess
import sys


def run(script, root):
    r = subprocess.run([sys.executable, script, root], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main(source):
    script = os.path.join(source, "scripts", "find_twins.py")
    data = os.path.join(source, "tests", "data", "twins")
    problems = []
    rc, out = run(script, os.path.join(data, "twin"))
    if rc != 1:
        problems.append(f"twin: exit {rc}, expected 1")
    for pair in ("MapSettingsFixture (map_spec.h:7) and MapSpecFixture (map_spec.h:18) hold the same 7 fields",
                 "only MapSettingsFixture has coarsen; only MapSpecFixture has every",
                 "CompareCountsFixture (map_spec.h:34) and CompareNamesFixture (map_spec.h:30) hold the same 4 fields: "
                 "repeats, sizes, steps, warmup"):
        if pair not in out:
            problems.append(f"twin: the report does not say '{pair}'")
    rc, out2 = run(script, os.path.join(data, "apart"))
    if rc != 0:
        problems.append(f"apart: exit {rc}, expected 0")
    for p in problems:
        print("check_find_twins: " + p, file=sys.stderr)
    if problems:
        print(out + out2, file=sys.stderr)
        return 1
    print("check_find_twins: the twins are found, the rest is left alone")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
