#!/usr/bin/python3
"""Plot the energies and the temperature of a pairmd trajectory (H5MD) to a PNG.

usage: /usr/bin/python3 examples/plot_energies.py TRAJECTORY.h5 [OUT.png]

Works for any pairmd trajectory (reads observables/*/{step,time,value}); uses h5py and
matplotlib (Debian: python3-h5py, python3-matplotlib).
"""
import os
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(f, name):
    g = f["observables/" + name]
    unit = g["value"].attrs.get("unit", "")
    tunit = g["time"].attrs.get("unit", "")
    return g["time"][:], g["value"][:], unit, tunit


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else path.rsplit(".", 1)[0] + "_energies.png"
    with h5py.File(path, "r") as f:
        if "observables" not in f:
            sys.exit(f"{path}: no observables group (was output.trajectory set?)")
        units = f["parameters/units"][()]
        units = units.decode() if isinstance(units, bytes) else units
        title = f["parameters/config_path"][()]
        title = title.decode() if isinstance(title, bytes) else title
        data = {n: series(f, n) for n in ("potential_energy", "kinetic_energy", "total_energy", "temperature")}
    reduced = units == "lj"
    fig, (ax_e, ax_t) = plt.subplots(2, 1, sharex=True, figsize=(7, 6))
    for name, label in (("potential_energy", "potential"), ("kinetic_energy", "kinetic"), ("total_energy", "total")):
        t, v, unit, _ = data[name]
        ax_e.plot(t, v, label=label)
    t, v, unit, tunit = data["total_energy"]
    ax_e.set_ylabel("energy" + (" [epsilon]" if reduced else f" [{unit}]"))
    ax_e.legend()
    t, v, unit, tunit = data["temperature"]
    ax_t.plot(t, v, color="tab:red")
    ax_t.set_ylabel("temperature" + (" [epsilon/k_B]" if reduced else f" [{unit}]"))
    ax_t.set_xlabel("time" + (" [tau]" if reduced else f" [{tunit}]"))
    fig.suptitle(f"{os.path.basename(title)} ({units} units)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
