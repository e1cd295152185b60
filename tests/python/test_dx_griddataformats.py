#!/usr/bin/python3
"""A .dx file written by `pairmd potential-map` opens in GridDataFormats with the right shape,
origin, spacing and values.

usage: test_dx_griddataformats.py PAIRMD_BINARY WORKDIR   (exit 0 pass, 1 fail, 77 skipped)

Three charges at known positions (an sc lattice of one cell puts A at (0.5, 0.5, 0.5) in a box of
2; system.add_particles adds two B), region 'particles' with padding; the expected lattice and the
potential V(p) = k_e sum q / max(r, floor) are computed here independently with numpy.
"""
import math
import os
import subprocess
import sys

try:
    import numpy as np
    from gridData import Grid
except ImportError as e:  # the Debian packages python3-numpy / python3-griddataformats
    print("SKIP: " + str(e))
    sys.exit(77)

CONFIG = """
units: real
system:
  boundary: open
  types:
    - {name: A, mass: 10, charge: 1.0}
    - {name: B, mass: 10, charge: -0.5}
  lattice: {kind: sc, cells: 1, density: 0.125}
  add_particles:
    - {type: B, position: [1.7, 0.2, 1.1]}
    - {type: B, position: [0.3, 1.5, 1.9]}
force_field:
  pair:
    - potential: lj
      cutoff: 3.0
      coeffs:
        - {types: [A, A], epsilon: 0.1, sigma: 1.0}
        - {types: [A, B], epsilon: 0.1, sigma: 1.0}
        - {types: [B, B], epsilon: 0.1, sigma: 1.0}
integrator: {kind: langevin, dt: 0.001, temperature: 300, seed: 5}
"""
POSITIONS = np.array([[0.5, 0.5, 0.5], [1.7, 0.2, 1.1], [0.3, 1.5, 1.9]])
CHARGES = np.array([1.0, -0.5, -0.5])
K_E = 332.06371  # kcal A / (mol e^2), pairmd's Units::real().coulomb (LAMMPS's qqr2e)
SPACING, PADDING = 0.3, 1.5
FLOOR = SPACING / 2  # min_distance 0 means half the spacing


def main():
    pairmd, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    cfg = os.path.join(work, "three_charges.yaml")
    dx = os.path.join(work, "three_charges.dx")
    with open(cfg, "w") as f:
        f.write(CONFIG)
    run = subprocess.run([pairmd, "potential-map", "--config", cfg, "--spacing", str(SPACING), "--region",
                          "particles", "--padding", str(PADDING), "--kernel", "cpu", "--out", dx],
                         capture_output=True, text=True)
    print(run.stdout + run.stderr)
    if run.returncode != 0:
        print("FAIL: pairmd potential-map exited with", run.returncode)
        return 1

    g = Grid(dx)
    lo = POSITIONS.min(axis=0) - PADDING
    extent = POSITIONS.max(axis=0) + PADDING - lo
    shape = tuple(int(math.ceil(e / SPACING - 1e-9)) + 1 for e in extent)
    failures = []
    if g.grid.shape != shape:
        failures.append("shape %s, expected %s" % (g.grid.shape, shape))
    if not np.allclose(g.origin, lo, rtol=0, atol=1e-9):
        failures.append("origin %s, expected %s" % (g.origin, lo))
    if not np.allclose(g.delta, [SPACING] * 3, rtol=0, atol=1e-12):
        failures.append("delta %s, expected %s" % (g.delta, [SPACING] * 3))
    if not failures:
        # g.grid[i, j, k] is the point origin + (i, j, k) * delta.
        idx = np.indices(shape).reshape(3, -1).T
        points = lo + idx * SPACING
        r = np.linalg.norm(points[:, None, :] - POSITIONS[None, :, :], axis=2)
        expected = (K_E * CHARGES[None, :] / np.maximum(r, FLOOR)).sum(axis=1).reshape(shape)
        err = np.abs(g.grid - expected).max() / np.abs(expected).max()
        print("shape %s origin %s delta %s; max |error| / max |V| = %.2e" % (shape, g.origin, g.delta, err))
        if err > 1e-8:
            failures.append("values differ: max |error| / max |V| = %.3e" % err)
        # A spot check independent of the array order: the point nearest the anion B at (1.7, 0.2, 1.1).
        i, j, k = np.rint((POSITIONS[1] - lo) / SPACING).astype(int)
        p = lo + np.array([i, j, k]) * SPACING
        v = sum(K_E * q / max(np.linalg.norm(p - x), FLOOR) for q, x in zip(CHARGES, POSITIONS))
        if abs(g.grid[i, j, k] - v) > 1e-8 * abs(v):
            failures.append("V at (%d, %d, %d) is %r, expected %r" % (i, j, k, g.grid[i, j, k], v))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
