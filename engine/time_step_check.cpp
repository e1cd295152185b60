#include "engine/time_step_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace pairmd {

namespace {

std::string number(double x) {
  std::ostringstream s;
  s.precision(3);
  s << x;
  return s.str();
}

}  // namespace

TimeScales time_scales(const RunConfig& cfg, const SystemState& s, const Topology& topology) {
  TimeScales ts;
  const Units& u = cfg.model.units;
  const ForceField& ff = cfg.model.force_field;
  const int nt = ff.ntypes;
  // Types present, and the lightest mass of each (masses are per particle).
  std::vector<double> mass(nt, 0.0);
  double ke2 = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const int t = s.type[i];
    if (t >= 0 && t < nt && (mass[t] == 0 || s.mass[i] < mass[t])) mass[t] = s.mass[i];
    ke2 += s.mass[i] * dot(s.velocity[i], s.velocity[i]);
  }
  // k_B T from the thermostat, or from the start velocities where there is none (nve).
  double kT = u.kB * cfg.model.integrator.temperature;
  if (s.size() > 0) kT = std::max(kT, ke2 / (3.0 * static_cast<double>(s.size()) * u.force_to_accel));

  for (const PairTerm& term : ff.pair_terms) {
    if (term.kind != PairKind::LennardJones && term.kind != PairKind::WCA) continue;
    for (int a = 0; a < nt; ++a)
      for (int b = a; b < nt; ++b) {
        const PairCoeffs& c = term.coeffs[a * nt + b];
        if (mass[a] == 0 || mass[b] == 0 || !(c.epsilon > 0) || (term.kind == PairKind::LennardJones && !(c.rcut > 0)))
          continue;
        const double m = std::min(mass[a], mass[b]);
        const double v = std::sqrt(std::max(kT, c.epsilon) * u.force_to_accel / m);
        if (!(v > 0)) continue;
        const double t = c.sigma / v;
        if (ts.pair == 0 || t < ts.pair) {
          ts.pair = t;
          ts.pair_what = "a particle of type " + cfg.system.types[mass[a] <= mass[b] ? a : b].name +
                         " crossing sigma " + number(c.sigma) + " " + u.length_unit() + " of the pair (" +
                         cfg.system.types[a].name + ", " + cfg.system.types[b].name + ")";
        }
      }
  }
  std::vector<char> used(ff.bond_types.size(), 0);
  std::vector<double> lightest(ff.bond_types.size(), 0.0);
  for (const Bond& bond : topology.bonds) {
    if (bond.type < 0 || bond.type >= static_cast<int>(used.size())) continue;
    const double mi = s.mass[bond.i], mj = s.mass[bond.j];
    const double mu = mi * mj / (mi + mj);
    if (!used[bond.type] || mu < lightest[bond.type]) lightest[bond.type] = mu;
    used[bond.type] = 1;
  }
  for (size_t k = 0; k < ff.bond_types.size(); ++k) {
    if (!used[k]) continue;
    const BondType& bt = ff.bond_types[k];
    // V'' at the bond's typical length: harmonic k; FENE k (1 + x^2) / (1 - x^2)^2 at x = 1/2.
    const double curvature = bt.kind == BondKind::Fene ? bt.coeffs.k * 1.25 / 0.5625 : bt.coeffs.k;
    if (!(curvature > 0)) continue;
    const double period = 2 * M_PI * std::sqrt(lightest[k] / (curvature * u.force_to_accel));
    if (ts.bond == 0 || period < ts.bond) {
      ts.bond = period;
      ts.bond_what = "the vibration of bond type " + bt.name;
    }
  }
  return ts;
}

std::vector<std::string> time_step_warnings(const RunConfig& cfg, const SystemState& s, const Topology& topology) {
  std::vector<std::string> out;
  const IntegratorSettings& in = cfg.model.integrator;
  if (in.kind == IntegratorKind::Brownian) return out;
  const TimeScales ts = time_scales(cfg, s, topology);
  const Units& u = cfg.model.units;
  const std::string unit = u.time_unit();
  const std::string units_note = u.reduced() ? " (units lj: time in tau)" : " (units real, as LAMMPS: time in fs)";
  auto large = [&](double scale, double fraction, const std::string& what) {
    if (!(scale > 0) || in.dt <= scale / fraction) return;
    out.push_back("integrator.dt " + number(in.dt) + " " + unit + " is large for this system" + units_note + ": " +
                  what + " takes about " + number(scale) + " " + unit + ", and a time step above 1/" +
                  number(fraction) + " of that (" + number(scale / fraction) + " " + unit +
                  ") loses energy conservation and may blow up the run");
  };
  large(ts.pair, 50, ts.pair_what);
  large(ts.bond, 10, ts.bond_what);
  if (ts.pair > 0 && in.dt < ts.pair / 1e5)
    out.push_back("integrator.dt " + number(in.dt) + " " + unit + " is very small for this system" + units_note + ": " +
                  ts.pair_what + " takes about " + number(ts.pair) + " " + unit + ", " + number(ts.pair / in.dt) +
                  " steps" +
                  (u.reduced() ? "" : "; was dt meant in ps (pairmd's real time was ps before it took LAMMPS's fs)?"));
  return out;
}

}  // namespace pairmd
