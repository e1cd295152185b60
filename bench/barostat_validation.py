#!/usr/bin/env python3
"""The barostat's validation runs (docs/barostat.md): pairmd on the CPU against NVT, LAMMPS and the
Kremer-Grest melt; long, run by hand.

usage: barostat_validation.py write DIR              configs and LAMMPS inputs into DIR
       barostat_validation.py report DIR [OUT.png]   the table (CSV on stdout) and the plot

Between the two, in DIR, each with OMP_NUM_THREADS=1:
    pairmd run NAME.yaml            for every NAME.yaml (nvt_* first: npt_p0 takes its pressure
                                    from nvt_0.8442; `write` puts P0 = 3.636 there, the value of
                                    the run on record, and `report` says what the NVT run gave)
    lmp -in NAME.lmp -log NAME.log  for every NAME.lmp (Debian's LAMMPS, fix npt)

The LJ liquid: 864 particles (fcc 6^3), LJ cut at 2.5 (not shifted, no tail correction: the same
in LAMMPS's lj/cut), Langevin (friction 1) at dt 0.005; the barostat with tau_p 1 and
compressibility 0.05. LAMMPS: fix npt (Nose-Hoover chains, MTK), Tdamp 0.5, Pdamp 5, skin 0.3,
10,000 steps to equilibrate, then 200,000. Averages leave out the first 10,000 steps (20,000 for
the melt); errors are the plateau of block averages.
"""
import csv
import math
import os
import sys

P0 = 3.636  # NVT pressure at rho 0.8442, T 1.2 (nvt_0.8442)
STATES = [(1.2, 1.0, 0.75), (1.5, 3.0, 0.80), (2.0, 6.0, 0.85)]  # T, P, start density

LJ = """title: {name}
units: lj
steps: {steps}
system:
  types: [{{name: A, mass: 1.0}}]
  lattice: {{kind: fcc, cells: 6, density: {rho}}}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{{types: [A, A], epsilon: 1.0, sigma: 1.0}}]
integrator: {{kind: langevin, dt: 0.005, temperature: {T}, friction: 1.0, seed: {seed}}}
neighbor: {{skin: 0.3}}
output: {{thermo_every: 50, progress: off}}
"""
BAROSTAT = "barostat: {{kind: c_rescale, pressure: {P}, tau_p: 1.0, compressibility: 0.05}}\n"

KG = """title: Kremer-Grest melt at P 5
units: lj
steps: 100000
system:
  types: [{name: B, mass: 1.0}]
  chains: {count: 40, length: 50, density: 0.7, bond: fene, bond_length: 0.97, min_distance: 0.8, seed: 1}
  relax: {steps: 2000, max_move: 0.01}
force_field:
  exclusions: none
  bonds: [{name: fene, potential: fene, k: 30.0, r0: 1.5}]
  pair:
    - potential: wca
      coeffs: [{types: [B, B], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.01, temperature: 1.0, friction: 0.5, seed: 1990}
neighbor: {skin: 0.4}
barostat: {kind: c_rescale, pressure: 5.0, tau_p: 2.0, compressibility: 0.02}
output: {thermo_every: 100, progress: off}
"""

LAMMPS = """units lj
atom_style atomic
lattice fcc {rho}
region box block 0 6 0 6 0 6
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create {T} {seed} dist gaussian mom yes
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
timestep 0.005
fix 1 all npt temp {T} {T} 0.5 iso {P} {P} 5.0
thermo_style custom step temp press vol density pe
thermo_modify flush yes
thermo 50
run 10000
reset_timestep 0
run 200000
"""


def name_of(T, P):
    return f"T{T}_P{P}"


def write(d):
    os.makedirs(d, exist_ok=True)
    files = {
        "nvt_0.8442.yaml": LJ.format(name="nvt_0.8442", steps=210000, rho=0.8442, T=1.2, seed=11),
        "nvt_0.82.yaml": LJ.format(name="nvt_0.82", steps=110000, rho=0.82, T=1.2, seed=12),
        "nvt_0.87.yaml": LJ.format(name="nvt_0.87", steps=110000, rho=0.87, T=1.2, seed=13),
        "npt_p0.yaml": LJ.format(name="npt_p0", steps=210000, rho=0.8442, T=1.2, seed=31) + BAROSTAT.format(P=P0),
        "kg.yaml": KG,
    }
    for k, (T, P, rho) in enumerate(STATES):
        n = name_of(T, P)
        files[f"npt_{n}.yaml"] = LJ.format(name=f"npt_{n}", steps=210000, rho=rho, T=T, seed=21 + k) + BAROSTAT.format(
            P=P)
        files[f"lmp_{n}.lmp"] = LAMMPS.format(rho=rho, T=T, P=P, seed=4711 + k)
    for f, text in files.items():
        with open(os.path.join(d, f), "w") as out:
            out.write(text)


def block_error(x):
    """Largest standard error of the mean over block lengths 1, 2, 4, ... (at least 16 blocks)."""
    best, b = 0.0, 1
    while len(x) // b >= 16:
        nb = len(x) // b
        means = [sum(x[i * b:(i + 1) * b]) / b for i in range(nb)]
        m = sum(means) / nb
        best = max(best, math.sqrt(sum((y - m) ** 2 for y in means) / (nb - 1) / nb))
        b *= 2
    return best


def mean_err(x):
    return sum(x) / len(x), block_error(x)


def pairmd_rows(path, skip):
    with open(path) as f:
        rows = [r for r in csv.DictReader(f) if int(r["step"]) >= skip]

    def col(prefix):
        key = next(k for k in rows[0] if k.startswith(prefix))
        return [float(r[key]) for r in rows]

    return {"step": col("step"), "rho": col("density"), "P": col("pressure"), "V": col("volume"),
            "T": col("temperature")}


def lammps_rows(path, skip):
    lines = open(path).read().split("\n")
    start = [i for i, l in enumerate(lines) if l.split()[:2] == ["Step", "Temp"]][-1] + 1
    rows = []
    for l in lines[start:]:
        if not l.strip() or not l.split()[0].isdigit():
            break
        rows.append([float(x) for x in l.split()])
    rows = [r for r in rows if r[0] >= skip]
    return {"step": [r[0] for r in rows], "T": [r[1] for r in rows], "P": [r[2] for r in rows],
            "V": [r[3] for r in rows], "rho": [r[4] for r in rows]}


def compressibility(V, T, blocks=8):
    """Isothermal compressibility from volume fluctuations, var V / (k_B T <V>), with the error of
    its mean over `blocks` blocks of the run."""
    L = len(V) // blocks
    ks = []
    for b in range(blocks):
        x = V[b * L:(b + 1) * L]
        m = sum(x) / L
        ks.append(sum((v - m) ** 2 for v in x) / (L - 1) / (T * m))
    k = sum(ks) / blocks
    return k, math.sqrt(sum((y - k) ** 2 for y in ks) / (blocks - 1) / blocks)


def report(d, png=None):
    p = lambda f: os.path.join(d, f)
    out = csv.writer(sys.stdout)
    out.writerow(["run", "T", "P", "rho", "rho_err", "reference", "ref_rho", "ref_err", "note"])
    nvt = {r: pairmd_rows(p(f"nvt_{r}.thermo.csv"), 10000) for r in ("0.82", "0.8442", "0.87")}
    P = {r: mean_err(v["P"]) for r, v in nvt.items()}
    out.writerow(["nvt_0.8442", 1.2, f"{P['0.8442'][0]:.4f}+-{P['0.8442'][1]:.4f}", 0.8442, 0, "", "", "",
                  "NVT pressure at rho 0.8442 (P0 of npt_p0)"])
    # The NVT slope dP/drho (central difference; error from the two pressures' errors).
    slope = (P["0.87"][0] - P["0.82"][0]) / 0.05
    slope_err = math.hypot(P["0.87"][1], P["0.82"][1]) / 0.05
    kappa_nvt = 1 / (0.8442 * slope)
    kappa_nvt_err = kappa_nvt * slope_err / slope
    npt = pairmd_rows(p("npt_p0.thermo.csv"), 10000)
    rho, err = mean_err(npt["rho"])
    k, kerr = compressibility(npt["V"], 1.2)
    out.writerow(["npt_p0", 1.2, P0, f"{rho:.5f}", f"{err:.5f}", "NVT", 0.8442, 0, ""])
    out.writerow(["npt_p0 compressibility", 1.2, P0, f"{k:.4f}", f"{kerr:.4f}", "NVT slope 1/(rho dP/drho)",
                  f"{kappa_nvt:.4f}", f"{kappa_nvt_err:.4f}",
                  f"dP/drho = {slope:.2f}+-{slope_err:.2f} from nvt_0.82 and nvt_0.87"])
    for T, Pt, _ in STATES:
        n = name_of(T, Pt)
        a = mean_err(pairmd_rows(p(f"npt_{n}.thermo.csv"), 10000)["rho"])
        b = mean_err(lammps_rows(p(f"lmp_{n}.log"), 10000)["rho"])
        out.writerow([f"npt_{n}", T, Pt, f"{a[0]:.5f}", f"{a[1]:.5f}", "LAMMPS fix npt", f"{b[0]:.5f}", f"{b[1]:.5f}",
                      f"difference {(a[0] - b[0]) / math.hypot(a[1], b[1]):+.1f} sigma"])
    kg = pairmd_rows(p("kg.thermo.csv"), 20000)
    a = mean_err(kg["rho"])
    out.writerow(["kremer_grest", 1.0, 5.0, f"{a[0]:.5f}", f"{a[1]:.5f}", "Kremer & Grest 1990", 0.85, "", ""])
    if png:
        plot(d, png, npt, P0)


def plot(d, png, npt, p0):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    full = pairmd_rows(os.path.join(d, "npt_p0.thermo.csv"), 0)
    kg = pairmd_rows(os.path.join(d, "kg.thermo.csv"), 0)
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    t = [s * 0.005 for s in full["step"]]
    a.plot(t, full["rho"], lw=0.4, color="tab:blue", label="pairmd NPT, P0 = %.3f" % p0)
    a.axhline(0.8442, color="k", lw=1, label="NVT density 0.8442")
    a.set_ylim(0.82, 0.87)  # the first steps, from the fcc start under tension, go up to 0.93
    a.set_xlabel("time (tau)")
    a.set_ylabel("density")
    a.set_title("LJ liquid, 864 particles, T 1.2")
    a.legend(loc="lower right", fontsize=8)
    b.plot([s * 0.01 for s in kg["step"]], kg["rho"], lw=0.6, color="tab:red", label="pairmd, P = 5")
    b.axhline(0.85, color="k", lw=1, label="0.85 (Kremer & Grest)")
    b.set_xlabel("time (tau)")
    b.set_title("Kremer-Grest melt, 40 x 50 beads, T 1")
    b.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "write":
        write(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        sys.exit(__doc__)
