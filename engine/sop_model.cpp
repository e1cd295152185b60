#include "engine/sop_model.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace pairmd {

double ps_per_time_unit(const Units& units) { return std::sqrt(units.force_to_accel / 418.4); }

namespace {

// One copy's pair lists: the covalent bonds (each chain's backbone, then the bridges) and the
// native contacts (i < j, in order; not the bonded pairs).
struct CopyLists {
  std::vector<Bond> covalent, native;
  std::vector<double> covalent_r0, native_r0;
};

CopyLists copy_lists(const std::vector<Vec3d>& x, const std::vector<int>& chain_start, const std::vector<int>& chain_of,
                     const std::vector<SopBridge>& bridges, const SopParameters& p) {
  const int n = static_cast<int>(x.size());
  auto dist = [&](int i, int j) {
    const Vec3d d = x[i] - x[j];
    return std::sqrt(dot(d, d));
  };
  CopyLists l;
  std::set<std::pair<int, int>> bonded;
  auto bond = [&](int i, int j) {
    l.covalent.push_back({i, j, static_cast<int>(l.covalent.size())});
    l.covalent_r0.push_back(dist(i, j));
    bonded.insert(std::minmax(i, j));
  };
  for (size_t c = 0; c + 1 < chain_start.size(); ++c)
    for (int i = chain_start[c]; i + 1 < chain_start[c + 1]; ++i) bond(i, i + 1);
  for (const SopBridge& b : bridges) {
    if (b.i < 0 || b.j < 0 || b.i >= n || b.j >= n || b.i == b.j)
      throw std::invalid_argument("a covalent bridge names beads " + std::to_string(b.i) + " and " +
                                  std::to_string(b.j) + " of " + std::to_string(n));
    if (bonded.count(std::minmax(b.i, b.j)))
      throw std::invalid_argument("beads " + std::to_string(b.i) + " and " + std::to_string(b.j) +
                                  " are bonded twice (a bridge along the backbone, or a bridge given twice)");
    bond(b.i, b.j);
  }
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      if (chain_of[i] == chain_of[j] && j - i < p.min_separation) continue;
      const double r = dist(i, j);
      if (r < p.contact_cutoff && !bonded.count({i, j})) {
        l.native.push_back({i, j, static_cast<int>(l.native.size())});
        l.native_r0.push_back(r);
      }
    }
  return l;
}

// Appends the lists of one copy whose beads start at `offset`.
void append_copy(const CopyLists& l, int offset, SopModel& m) {
  for (size_t q = 0; q < l.covalent.size(); ++q) {
    m.backbone.push_back({l.covalent[q].i + offset, l.covalent[q].j + offset, static_cast<int>(m.backbone.size())});
    m.backbone_r0.push_back(l.covalent_r0[q]);
  }
  for (size_t q = 0; q < l.native.size(); ++q) {
    m.native.push_back({l.native[q].i + offset, l.native[q].j + offset, static_cast<int>(m.native.size())});
    m.native_r0.push_back(l.native_r0[q]);
  }
}

}  // namespace

SopModel build_sop_model(const std::vector<std::vector<Vec3d>>& chains, const std::vector<std::string>& names,
                         const SopParameters& p, const std::vector<SopBridge>& bridges) {
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
  m.bridges_per_copy = static_cast<int>(bridges.size());
  const CopyLists lists = copy_lists(x, m.chain_start, chain_of, bridges, p);
  // Copies on a cubic lattice, each shifted so that its bounding box starts at its site.
  Vec3d lo{std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), std::numeric_limits<double>::max()};
  Vec3d hi{-lo.x, -lo.y, -lo.z};
  for (const Vec3d& r : x) {
    lo = {std::min(lo.x, r.x), std::min(lo.y, r.y), std::min(lo.z, r.z)};
    hi = {std::max(hi.x, r.x), std::max(hi.y, r.y), std::max(hi.z, r.z)};
  }
  if (p.copies == 1) {
    m.x = x;
    append_copy(lists, 0, m);
    m.box.periodic = false;
    m.box.lo = lo;
    m.box.L = {hi.x - lo.x + 1.0, hi.y - lo.y + 1.0, hi.z - lo.z + 1.0};
    return m;
  }
  int side = 1;
  while (static_cast<long>(side) * side * side < p.copies) ++side;
  const double gap = p.copy_gap < 0 ? p.repulsion_cutoff : p.copy_gap;
  const Vec3d cell{hi.x - lo.x + gap, hi.y - lo.y + gap, hi.z - lo.z + gap};
  m.box.periodic = true;
  m.box.lo = {0, 0, 0};
  m.box.L = {side * cell.x, side * cell.y, side * cell.z};
  m.x.reserve(static_cast<size_t>(n) * p.copies);
  for (int k = 0; k < p.copies; ++k) {
    const int a = k % side, b = (k / side) % side, c = k / (side * side);
    const Vec3d shift{a * cell.x + 0.5 * gap - lo.x, b * cell.y + 0.5 * gap - lo.y, c * cell.z + 0.5 * gap - lo.z};
    for (const Vec3d& r : x) m.x.push_back(r + shift);
    append_copy(lists, k * n, m);
  }
  return m;
}

namespace {

std::string num(double v) {
  std::ostringstream s;
  s << std::setprecision(10) << v;
  return s.str();
}

std::string num3(double v) {
  std::ostringstream s;
  s << std::setprecision(3) << v;
  return s.str();
}

std::string vec(const Vec3d& v) { return "[" + num(v.x) + ", " + num(v.y) + ", " + num(v.z) + "]"; }

// 1 kcal/(mol A^2) in N/m: 4184 J / 6.02214076e23 / 1e-20 m^2.
constexpr double kNewtonPerMetrePerKcal = 4184.0 / 6.02214076e23 / 1e-20;

// 1 kcal/(mol A) in pN: 4184 J / 6.02214076e23 / 1e-10 m / 1e-12 N.
constexpr double kPiconewtonPerKcal = 4184.0 / 6.02214076e23 / 1e-10 / 1e-12;

}  // namespace

// "98 covalent bonds (97 backbone, 1 disulfide)" (of all copies).
std::string covalent_bonds_text(const SopModel& m) {
  const size_t copies = m.beads_per_copy > 0 ? m.x.size() / m.beads_per_copy : 1;
  const size_t bridges = copies * m.bridges_per_copy;
  std::ostringstream c;
  c << m.backbone.size() << " covalent bonds (" << m.backbone.size() - bridges << " backbone, " << bridges
    << (bridges == 1 ? " disulfide)" : " disulfides)");
  return c.str();
}

std::string sop_config_text(const SopModel& m, const SopParameters& p, const SopFiles& files, const std::string& title,
                            const std::vector<std::string>& header) {
  const Units units = Units::real();
  const double tau = ps_per_time_unit(units);  // ps per time unit
  const bool brownian = p.integrator == "brownian";
  const double dt_ps = p.dt_ps > 0 ? p.dt_ps : (brownian ? 0.04 : 0.02);
  const double gamma = p.friction_per_ps > 0 ? p.friction_per_ps : (brownian ? 50.0 / 3.0 : 1.0);
  const double repulsion_at_cutoff = p.epsilon_l * std::pow(p.sigma / p.repulsion_cutoff, 6);
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
    << "      cutoff: " << num(p.repulsion_cutoff) << "   # A\n"
    << "      shift: false   # cut, not shifted, as SOP-GPU: V(cutoff) = " << num3(repulsion_at_cutoff) << " kcal/mol\n"
    << "      coeffs: [{types: [CA, CA], epsilon: " << num(p.epsilon_l) << ", sigma: " << num(p.sigma)
    << "}]   # kcal/mol, A\n"
    << "  pair_lists:\n"
    << "    - name: backbone   # " << covalent_bonds_text(m) << ": FENE about each native distance r0\n"
    << "      potential: fene_native   # -(k/2) R^2 ln(1 - ((r - r0)/R)^2)\n"
    << "      k: " << num(p.bond_k) << "   # kcal/(mol A^2) = " << num3(p.bond_k * kNewtonPerMetrePerKcal) << " N/m\n"
    << "      max_extension: " << num(p.bond_max_extension) << "   # R, A\n"
    << "      columns: [r0]\n"
    << "      file: " << files.backbone << "\n"
    << "    - name: native   # " << m.native.size() << " native contacts (r0 < " << num(p.contact_cutoff)
    << " A, |i - j| > " << p.min_separation - 1 << ", not bonded): eps_h [(r0/r)^12 - 2 (r0/r)^6]\n"
    << "      potential: lj_native\n"
    << "      epsilon: " << num(p.epsilon_h) << "   # kcal/mol\n"
    << "      columns: [r0]\n"
    << "      file: " << files.native << "\n"
    << "integrator: {kind: " << p.integrator << ", dt: " << num(dt_ps / tau) << ", temperature: " << num(p.temperature)
    << ", friction: " << num(gamma * tau) << ", seed: " << p.seed << ", max_step_displacement: " << num(p.max_step)
    << "}   # dt " << num(dt_ps) << " ps, gamma " << num(gamma) << "/ps\n"
    << "neighbor: {skin: " << (p.skin < 0 ? std::string("auto") : num(p.skin)) << "}"
    << (p.skin < 0 ? "   # skin and strategy timed at start on a GPU (docs/gpu.md)\n" : "\n")
    << "force: {strategy: auto}\n"
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
        << "  speed: " << num(p.pull_speed * tau) << "   # " << num(p.pull_speed)
        << " A/ps; loading rate k_s v = " << num3(p.pull_spring * p.pull_speed * kPiconewtonPerKcal * 1e12)
        << " pN/s\n";
    else
      y << "  force: " << num(p.pull_force) << "   # kcal/(mol A) = " << num(p.pull_force * kPiconewtonPerKcal)
        << " pN\n";
    if (p.tethered < 0) {
      const Vec3d d = m.x[p.pulled] - m.x[0];
      y << "  direction: " << vec(d) << "\n";
    }
    y << "  every: " << p.pull_every << "\n";
  }
  if (p.independent > 1)
    y << "replicas:   # " << p.independent << " independent runs (seed + k), one GPU ensemble (docs/ensembles.md)\n"
      << "  count: " << p.independent << "\n  mode: independent\n  exchange_every: " << p.thermo_every << "\n";
  return y.str();
}

}  // namespace pairmd
