#!/usr/bin/python3
"""The persistence length of the chains of a pairmd trajectory (configs/semiflexible_melt.yaml).

Reads PREFIX.h5 (positions with their images, so chains are whole), takes the bond vectors u_i
of each chain (consecutive particles, as pairmd's chain builder numbers them), and averages the
bond-vector correlation C(s) = <u_i . u_{i+s}> / <|u|^2> over chains, positions along them and
frames (after the first `--skip` frames). For a chain with the cosine bending potential
V = k (1 + cos theta) and freely rotating joints, C(s) = <cos beta>^s = exp(-s b / l_p) with
<cos beta> = coth(k/kT) - kT/k (the Langevin function) and l_p = -b / ln <cos beta>: the known
value this prints beside the measured ones: l_p = -b / ln C(1) from the measured <cos beta>, and
a fit of ln C(s) = -s b / l_p over the s where C(s) > 0.1. In a melt the beads' excluded volume
(WCA between all beads, 1-3 and 1-4 neighbours included) correlates successive joints, so C(s)
decays faster than C(1)^s beyond the first bonds (and the chain's large-scale statistics are
those of a melt, not of a freely rotating chain): the fit is shown, the check is on C(1).

usage: persistence_length.py PREFIX.h5 --length N --k K [--kT 1] [--skip 1] [--tolerance 0.1]
Exit 1 when l_p from <cos beta> and the known l_p differ by more than the tolerance (relative).
"""
import argparse
import math
import sys

import h5py
import numpy as np


def bond_correlation(pos, chains, length, smax):
    """C(s), s = 0..smax, and the mean bond length, of one frame's unwrapped positions."""
    x = pos[: chains * length].reshape(chains, length, 3)
    u = np.diff(x, axis=1)  # chains, length-1, 3
    b2 = np.mean(np.sum(u * u, axis=2))
    c = [np.mean(np.sum(u[:, : u.shape[1] - s] * u[:, s:], axis=2)) / b2 for s in range(smax + 1)]
    return np.array(c), math.sqrt(b2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trajectory")
    ap.add_argument("--length", type=int, required=True, help="beads per chain")
    ap.add_argument("--k", type=float, required=True, help="the cosine angle potential's k")
    ap.add_argument("--kT", type=float, default=1.0)
    ap.add_argument("--skip", type=int, default=1, help="frames to leave out (equilibration)")
    ap.add_argument("--smax", type=int, default=20)
    ap.add_argument("--tolerance", type=float, default=0.1)
    a = ap.parse_args()
    with h5py.File(a.trajectory, "r") as f:
        pos = f["particles/all/position/value"][()]
        image = f["particles/all/image/value"][()]
        edges = f["particles/all/box/edges"]
        box = edges["value"][()] if isinstance(edges, h5py.Group) else np.broadcast_to(edges[()], (len(pos), 3))
    n = pos.shape[1]
    chains = n // a.length
    frames = range(min(a.skip, len(pos) - 1), len(pos))
    cs, bs = [], []
    for t in frames:
        unwrapped = pos[t] + image[t] * np.asarray(box[t]).reshape(-1)[:3]
        c, b = bond_correlation(unwrapped, chains, a.length, min(a.smax, a.length - 2))
        cs.append(c)
        bs.append(b)
    c = np.mean(cs, axis=0)
    b = float(np.mean(bs))
    x = a.k / a.kT
    cos_known = 1.0 / math.tanh(x) - 1.0 / x
    lp_known = -b / math.log(cos_known)
    s = np.arange(1, len(c))
    use = c[1:] > 0.1
    slope = np.polyfit(s[use], np.log(c[1:][use]), 1)[0] if use.sum() >= 2 else math.log(c[1])
    lp_fit = -b / slope
    lp = -b / math.log(c[1])
    print(f"{chains} chains of {a.length} beads, {len(frames)} frames; mean bond length b = {b:.4f}")
    print(" s   C(s) measured   <cos beta>^s")
    for k in range(min(len(c), 8)):
        print(f"{k:2d}   {c[k]:10.4f}     {cos_known ** k:10.4f}")
    print(f"<cos beta>: measured {c[1]:.4f}, freely rotating chain {cos_known:.4f}")
    print(f"persistence length l_p: from <cos beta> {lp:.3f}, fit of C(s) > 0.1 {lp_fit:.3f}; "
          f"known {lp_known:.3f} (k b / kT = {a.k * b / a.kT:.3f})")
    ok = abs(lp - lp_known) <= a.tolerance * lp_known
    print("agree within", a.tolerance if ok else f"{a.tolerance}: NO")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
