#include "engine/sop_model.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace pairmd {

double ps_per_time_unit(const Units& units) { return std::sqrt(units.force_to_accel / 418.4); }

SopModel build_sop_model(const std::vector<std::vector<Vec3d>>& chains, const std::vector<std::string>& names,
                         const SopParameters& p) {
  if (p.copies < 1) throw std::invalid_argument("copies must be >= 1");
  if (!(p.contact_cutoff > 0) || !(p.bond_k > 0) || !(p.bond_max_extension > 0) || !(p.sigma > 0) ||
      !(p.repulsion_cutoff > 0) || !(p.mass > 0) || p.epsilon_h < 0 || p.epsilon_l < 0 || p.min_separation < 1)
    throw std::invalid_argument("SOP parameters out of range");
  SopModel m;
  m.chain_names = names;
  std::vector<Vec3d> x;
  std::vector<int> chain_of;
  for (size_t c = 0; c < chains.size(); ++c) {
    m.chain_start.push_back(static_cast<int>(x.size()));
    for (const Vec3d& r : chains[c]) {
      x.push_back(r);
      chain_of.push_back(static_cast<int>(c));
    }
  }
  m.chain_start.push_back(static_cast<int>(x.size()));
  const int n = static_cast<int>(x.size());
  m.beads_per_copy = n;
  // One copy's lists: the backbone, then the native contacts (i < j, in order).
  std::vector<Bond> backbone, native;
  std::vector<double> backbone_r0, native_r0;
  auto dist = [&](int i, int j) {
    const Vec3d d = x[i] - x[j];
    return std::sqrt(dot(d, d));
  };
  for (size_t c = 0; c < chains.size(); ++c)
    for (int i = m.chain_start[c]; i + 1 < m.chain_start[c + 1]; ++i) {
      backbone.push_back({i, i + 1, static_cast<int>(backbone.size())});
      backbone_r0.push_back(dist(i, i + 1));
    }
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      if (chain_of[i] == chain_of[j] && j - i < p.min_separation) continue;
      const double r = dist(i, j);
      if (r < p.contact_cutoff) {
        native.push_back({i, j, static_cast<int>(native.size())});
        native_r0.push_back(r);
      }
    }
  // Copies on a cubic lattice, each shifted so that its bounding box starts at its site.
  Vec3d lo{std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
  Vec3d hi{-lo.x, -lo.y, -lo.z};
  for (const Vec3d& r : x) {
    lo = {std::min(lo.x, r.x), std::min(lo.y, r.y), std::min(lo.z, r.z)};
    hi = {std::max(hi.x, r.x), std::max(hi.y, r.y), std::max(hi.z, r.z)};
  }
  if (p.copies == 1) {
    m.x = x;
    m.backbone = backbone;
    m.backbone_r0 = backbone_r0;
    m.native = native;
    m.native_r0 = native_r0;
    m.box.periodic = false;
    m.box.lo = lo;
    m.box.L = {hi.x - lo.x + 1.0, hi.y - lo.y + 1.0, hi.z - lo.z + 1.0};
    return m;
  }
  int side = 1;
  while (static_cast<long>(side) * side * side < p.copies) ++side;
  const Vec3d cell{hi.x - lo.x + p.copy_gap, hi.y - lo.y + p.copy_gap, hi.z - lo.z + p.copy_gap};
  m.box.periodic = true;
  m.box.lo = {0, 0, 0};
  m.box.L = {side * cell.x, side * cell.y, side * cell.z};
  m.x.reserve(static_cast<size_t>(n) * p.copies);
  for (int k = 0; k < p.copies; ++k) {
    const int a = k % side, b = (k / side) % side, c = k / (side * side);
    const Vec3d shift{a * cell.x + 0.5 * p.copy_gap - lo.x, b * cell.y + 0.5 * p.copy_gap - lo.y,
                      c * cell.z + 0.5 * p.copy_gap - lo.z};
    for (const Vec3d& r : x) m.x.push_back(r + shift);
    const int offset = k * n;
    for (size_t q = 0; q < backbone.size(); ++q) {
      m.backbone.push_back({backbone[q].i + offset, backbone[q].j + offset, static_cast<int>(m.backbone.size())});
      m.backbone_r0.push_back(backbone_r0[q]);
    }
    for (size_t q = 0; q < native.size(); ++q) {
      m.native.push_back({native[q].i + offset, native[q].j + offset, static_cast<int>(m.native.size())});
      m.native_r0.push_back(native_r0[q]);
    }
  }
  return m;
}

namespace {

std::string num(double v) {
  std::ostringstream s;
  s << std::setprecision(10) << v;
  return s.str();
}

std::string vec(const Vec3d& v) { return "[" + num(v.x) + ", " + num(v.y) + ", " + num(v.z) + "]"; }

}  // namespace

std::string sop_config_text(const SopModel& m, const SopParameters& p, const SopFiles& files, const std::string& title,
                            const std::vector<std::string>& header) {
  const Units units = Units::real();
  const double tau = ps_per_time_unit(units);  // ps per time unit
  const bool brownian = p.integrator == "brownian";
  const double dt_ps = p.dt_ps > 0 ? p.dt_ps : (brownian ? 0.04 : 0.02);
  const double gamma = p.friction_per_ps > 0 ? p.friction_per_ps : (brownian ? 50.0 / 3.0 : 1.0);
  std::ostringstream y;
  for (const std::string& h : header) y << "# " << h << "\n";
  y << "title: " << title << "\n"
    << "units: real   # lengths in A, energies in kcal/mol, temperatures in K, times in " << units.time_unit() << "\n"
    << "steps: " << p.steps << "\n"
    << "system:\n"
    << "  types: [{name: CA, mass: " << num(p.mass) << "}]   # one bead per residue, at its C-alpha\n"
    << "  boundary: " << (m.box.periodic ? "periodic" : "open") << "\n"
    << "  file: {path: " << files.start << "}\n"
    << "  velocities: {temperature: " << num(p.temperature) << "}\n"
    << "force_field:\n"
    << "  exclusions: none   # the pair lists below leave their pairs out of the repulsion\n"
    << "  pair:\n"
    << "    - potential: repulsive_r6   # eps_l (sigma/r)^6 between all other pairs (|i - j| = 2 included)\n"
    << "      cutoff: " << num(p.repulsion_cutoff) << "\n"
    << "      shift: true\n"
    << "      coeffs: [{types: [CA, CA], epsilon: " << num(p.epsilon_l) << ", sigma: " << num(p.sigma) << "}]\n"
    << "  pair_lists:\n"
    << "    - name: backbone   # " << m.backbone.size() << " bonds: FENE about each native distance r0\n"
    << "      potential: fene_native\n"
    << "      k: " << num(p.bond_k) << "\n"
    << "      max_extension: " << num(p.bond_max_extension) << "\n"
    << "      columns: [r0]\n"
    << "      file: " << files.backbone << "\n"
    << "    - name: native   # " << m.native.size() << " native contacts (r0 < " << num(p.contact_cutoff)
    << " A, |i - j| > " << p.min_separation - 1 << "): eps_h [(r0/r)^12 - 2 (r0/r)^6]\n"
    << "      potential: lj_native\n"
    << "      epsilon: " << num(p.epsilon_h) << "\n"
    << "      columns: [r0]\n"
    << "      file: " << files.native << "\n"
    << "integrator: {kind: " << p.integrator << ", dt: " << num(dt_ps / tau) << ", temperature: " << num(p.temperature)
    << ", friction: " << num(gamma * tau) << ", seed: " << p.seed << ", max_step_displacement: " << num(p.max_step)
    << "}   # dt " << num(dt_ps) << " ps, gamma " << num(gamma) << "/ps\n"
    << "neighbor: {skin: " << num(p.skin) << "}\n"
    << "output:\n"
    << "  thermo_every: " << p.thermo_every << "\n"
    << "  trajectory: {every: " << p.trajectory_every << "}\n";
  if (p.pulled >= 0) {
    y << "pulling:   # bead " << p.pulled << " pulled";
    if (p.tethered >= 0) y << ", bead " << p.tethered << " held by a spring";
    y << "\n  mode: " << p.pull_mode << "\n  pulled: " << p.pulled << "\n";
    if (p.tethered >= 0) y << "  tethered: " << p.tethered << "\n  tether_spring: " << num(p.tether_spring) << "\n";
    if (p.pull_mode == "ramp")
      y << "  spring: " << num(p.pull_spring) << "   # kcal/(mol A^2)\n"
        << "  speed: " << num(p.pull_speed * tau) << "   # " << num(p.pull_speed) << " A/ps\n";
    else
      y << "  force: " << num(p.pull_force) << "   # kcal/(mol A) = " << num(p.pull_force * 69.4786) << " pN\n";
    if (p.tethered < 0) {
      const Vec3d d = m.x[p.pulled] - m.x[0];
      y << "  direction: " << vec(d) << "\n";
    }
    y << "  every: " << p.pull_every << "\n";
  }
  return y.str();
}

}  // namespace pairmd
