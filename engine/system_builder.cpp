#include "engine/system_builder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <sstream>
#include <unordered_map>

#include <unistd.h>

#include "backends/tuning.h"
#include "base/bond_images.h"
#include "engine/minimize.h"
#include "engine/pulling.h"
#include "engine/simulation.h"
#include "engine/start_file.h"
#include "integrators/noise.h"

namespace pairmd {

namespace {

void add_particle(SystemState& s, Vec3d x, int type, double charge, const RunConfig& cfg, Int3 image = {0, 0, 0}) {
  s.position.push_back(x);
  s.velocity.push_back({0, 0, 0});
  s.image.push_back(image);
  s.type.push_back(type);
  s.mass.push_back(cfg.system.types[type].mass);
  s.charge.push_back(charge);
}

void build_lattice(const RunConfig& cfg, SystemState& s) {
  const LatticeSpec& l = cfg.system.lattice;
  const bool fcc = l.kind == LatticeKind::Fcc;
  const int basis = fcc ? 4 : 1;
  const double a = std::cbrt(basis / l.density);
  const double frac[4][3] = {{0.25, 0.25, 0.25}, {0.75, 0.75, 0.25}, {0.75, 0.25, 0.75}, {0.25, 0.75, 0.75}};
  s.box.lo = {0, 0, 0};
  s.box.L = {a * l.cells[0], a * l.cells[1], a * l.cells[2]};
  const double q = cfg.system.types[l.type].charge;
  for (int z = 0; z < l.cells[2]; ++z)
    for (int y = 0; y < l.cells[1]; ++y)
      for (int x = 0; x < l.cells[0]; ++x)
        for (int b = 0; b < basis; ++b) {
          const double* f = fcc ? frac[b] : frac[0];
          add_particle(s, {(x + f[0]) * a, (y + f[1]) * a, (z + f[2]) * a}, l.type, q, cfg);
        }
}

// Uniform grid of already placed beads, for the closest-approach test of the random walks.
class PlacementGrid {
 public:
  PlacementGrid(const Box& box, double cell) : box_(box) {
    for (int d = 0; d < 3; ++d) {
      const double len = d == 0 ? box.L.x : d == 1 ? box.L.y : box.L.z;
      n_[d] = std::max(1, static_cast<int>(len / std::max(cell, 1e-6)));
      n_[d] = std::min(n_[d], 512);
    }
  }
  void insert(int id, Vec3d x) { cells_[key(cell(x))].push_back(id); }
  // Smallest distance from x to a placed bead other than `skip`.
  double closest(Vec3d x, const std::vector<Vec3d>& pos, int skip) const {
    double best = 1e300;
    const std::array<int, 3> c = cell(x);
    for (int dz = -1; dz <= 1; ++dz)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          std::array<int, 3> k = {c[0] + dx, c[1] + dy, c[2] + dz};
          for (int d = 0; d < 3; ++d) k[d] = (k[d] + n_[d]) % n_[d];
          auto it = cells_.find(key(k));
          if (it == cells_.end()) continue;
          for (int j : it->second) {
            if (j == skip) continue;
            const Vec3d d = box_.min_image(x - pos[j]);
            best = std::min(best, std::sqrt(dot(d, d)));
          }
        }
    return best;
  }

 private:
  std::array<int, 3> cell(Vec3d x) const {
    const double r[3] = {(x.x - box_.lo.x) / box_.L.x, (x.y - box_.lo.y) / box_.L.y, (x.z - box_.lo.z) / box_.L.z};
    std::array<int, 3> c;
    for (int d = 0; d < 3; ++d) c[d] = std::min(n_[d] - 1, std::max(0, static_cast<int>(r[d] * n_[d])));
    return c;
  }
  long key(const std::array<int, 3>& c) const { return (static_cast<long>(c[2]) * n_[1] + c[1]) * n_[0] + c[0]; }
  Box box_;
  int n_[3];
  std::unordered_map<long, std::vector<int>> cells_;
};

// The counterions that neutralise the chains' charge (0 without counterion_type or without a
// charge). Throws ConfigError when they cannot, or would be too many.
long chain_counterions(const RunConfig& cfg) {
  const ChainsSpec& ch = cfg.system.chains;
  const std::vector<TypeSpec>& types = cfg.system.types;
  long charged = 0;
  for (int k = 0; k < ch.length; ++k)
    if (ch.charged_every == 0 || k % ch.charged_every == 0) ++charged;
  charged *= ch.count;
  const double total_charge = types[ch.monomer_type].charge * static_cast<double>(charged);
  if (ch.counterion_type < 0 || total_charge == 0.0) return 0;
  const double qc = types[ch.counterion_type].charge;
  const double n = -total_charge / qc;
  if (!(qc != 0.0) || n < 0 || std::fabs(n - std::round(n)) > 1e-9)
    throw ConfigError(cfg.path + ": system.chains.counterion_type: counterions of charge " + std::to_string(qc) +
                      " cannot neutralise a chain charge of " + std::to_string(total_charge));
  if (n + static_cast<double>(ch.count) * ch.length > static_cast<double>(kMaxParticles))
    throw ConfigError(cfg.path + ": system.chains.counterion_type: " + std::to_string(n) +
                      " counterions would make more than the " + std::to_string(kMaxParticles) +
                      " particles pairmd can hold");
  return std::lround(n);
}

// Beads placed at random in a cubic box of side L (system.chains.seed): each the best of up to
// 100 trials for the closest approach to the beads placed before it (min_distance; the
// minimisation fixes what the trials do not).
class ChainPlacer {
 public:
  ChainPlacer(const ChainsSpec& ch, const Box& box, double L)
      : ch_(ch),
        L_(L),
        rng_(ch.seed),
        // Any cell at least min_distance wide finds every bead closer than min_distance, so the
        // placement is the same for any such cell; smaller cells at high densities keep the number
        // of beads each trial looks at bounded (about 4 per cell).
        grid_(box, std::max(ch.min_distance, std::min(0.5, std::cbrt(4.0 / ch.density)))) {}

  // Bead k of the chain whose beads end `s`: its first bead anywhere, the others a bond length
  // from their predecessor. A bead that steps out of the box is wrapped in and counts the
  // crossing on top of its predecessor's images, so the chain stays whole in unwrapped coordinates.
  void place_bead(int k, const SystemState& s, Vec3d& best, Int3& best_image) {
    double best_d = -1;
    for (int trial = 0; trial < 100 && best_d < ch_.min_distance; ++trial) {
      Vec3d x = k == 0 ? random_point() : s.position.back() + ch_.bond_length * random_direction();
      Int3 im = k == 0 ? Int3{0, 0, 0} : s.image.back();
      s.box.wrap(x, im);
      const double d = grid_.closest(x, s.position, k == 0 ? -1 : static_cast<int>(s.size()) - 1);
      if (d > best_d) {
        best_d = d;
        best = x;
        best_image = im;
      }
    }
  }

  // A particle anywhere (a counterion).
  Vec3d place_free(const SystemState& s) {
    Vec3d best{0, 0, 0};
    double best_d = -1;
    for (int trial = 0; trial < 100 && best_d < ch_.min_distance; ++trial) {
      const Vec3d x = random_point();
      const double d = grid_.closest(x, s.position, -1);
      if (d > best_d) {
        best_d = d;
        best = x;
      }
    }
    return best;
  }

  // The particle just added to `s` is placed.
  void placed(const SystemState& s) { grid_.insert(static_cast<int>(s.size()) - 1, s.position.back()); }

 private:
  Vec3d random_point() { return Vec3d{uni_(rng_) * L_, uni_(rng_) * L_, uni_(rng_) * L_}; }
  Vec3d random_direction() {
    const double z = 2 * uni_(rng_) - 1, phi = 2 * M_PI * uni_(rng_), r = std::sqrt(1 - z * z);
    return Vec3d{r * std::cos(phi), r * std::sin(phi), z};
  }

  const ChainsSpec& ch_;
  double L_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uni_{0.0, 1.0};
  PlacementGrid grid_;
};

// The bond, angle and dihedral along the chain that bead j (the chain's k-th) ends
// (system.chains.bond_type, .angle, .dihedral).
void add_chain_terms(const ChainsSpec& ch, int k, int j, Topology& topo) {
  if (k == 0) return;
  topo.bonds.push_back({j - 1, j, ch.bond_type});
  if (k >= 2 && ch.angle_type >= 0) topo.angles.push_back({j - 2, j - 1, j, ch.angle_type});
  if (k >= 3 && ch.dihedral_type >= 0) topo.dihedrals.push_back({j - 3, j - 2, j - 1, j, ch.dihedral_type});
}

void build_chains(const RunConfig& cfg, SystemState& s, Topology& topo) {
  const ChainsSpec& ch = cfg.system.chains;
  const std::vector<TypeSpec>& types = cfg.system.types;
  const double qm = types[ch.monomer_type].charge;
  const long counterions = chain_counterions(cfg);
  const double ntotal = static_cast<double>(ch.count) * ch.length + counterions;
  const double L = std::cbrt(ntotal / ch.density);
  s.box.lo = {0, 0, 0};
  s.box.L = {L, L, L};
  if (!cfg.system.periodic) s.box.periodic = false;

  ChainPlacer placer(ch, s.box, L);
  for (int c = 0; c < ch.count; ++c) {
    for (int k = 0; k < ch.length; ++k) {
      Vec3d x{0, 0, 0};
      Int3 image{0, 0, 0};
      placer.place_bead(k, s, x, image);
      const bool charged_bead = ch.charged_every == 0 || k % ch.charged_every == 0;
      add_particle(s, x, ch.monomer_type, charged_bead ? qm : 0.0, cfg, image);
      placer.placed(s);
      add_chain_terms(ch, k, static_cast<int>(s.size()) - 1, topo);
    }
  }
  for (long k = 0; k < counterions; ++k) {
    add_particle(s, placer.place_free(s), ch.counterion_type, types[ch.counterion_type].charge, cfg);
    placer.placed(s);
  }
}

// system.add_particles, after the minimisation: `pairmd place-ions` chose these positions against
// the minimised system, which a rebuild reproduces exactly.
void add_listed_particles(const RunConfig& cfg, SystemState& s) {
  for (const AddedParticle& p : cfg.system.add_particles) {
    Vec3d x = p.position;
    if (s.box.periodic) {
      double* c[3] = {&x.x, &x.y, &x.z};
      const double lo[3] = {s.box.lo.x, s.box.lo.y, s.box.lo.z}, L[3] = {s.box.L.x, s.box.L.y, s.box.L.z};
      for (int a = 0; a < 3; ++a) {
        *c[a] = lo[a] + std::fmod(*c[a] - lo[a], L[a]);
        if (*c[a] < lo[a]) *c[a] += L[a];
        if (*c[a] >= lo[a] + L[a]) *c[a] = lo[a];
      }
    }
    add_particle(s, x, p.type, cfg.system.types[p.type].charge, cfg);
  }
}

// Start files written by other tools (or by hand) may carry image flags that cut molecules
// (LAMMPS warns about such bonds too): analyses of unwrapped coordinates would see bonds a box
// length long, so the flags are made to follow the bonds.
void repair_start_file_images(SystemState& s, const Topology& t, std::vector<std::string>& notes) {
  const BondImageReport r = repair_bond_images(s, t);
  if (r.broken == 0) return;
  std::ostringstream m;
  m << "start file: warning: " << r.broken << " of " << t.bonds.size()
    << " bonds were not whole in unwrapped coordinates (position + image x box length); the image flags of "
    << r.changed << " particle(s) were set to follow the bonds (positions unchanged)";
  if (r.loops > 0)
    m << "; " << r.loops << " bond(s) close a ring through the periodic boundary and cannot all be whole";
  notes.push_back(m.str());
}

}  // namespace

void validate_against_box(const RunConfig& cfg, const Box& box) {
  validate_electrostatics(cfg, box);
  if (!box.periodic) return;
  const double half = 0.5 * std::min({box.L.x, box.L.y, box.L.z});
  // The runaway test compares each step's move with this limit; a move of half a box or more
  // can no longer be told from a shorter one the other way, and one of a box or more is not
  // wrapped back in: an exploding run would go on with particles outside the box.
  if (!(cfg.model.max_step_displacement < half)) {
    const std::string key = "integrator.max_step_displacement";
    auto it = cfg.locations.find(key);
    std::ostringstream m;
    m << (it != cfg.locations.end() ? it->second : cfg.path) << ": " << key << ": " << cfg.model.max_step_displacement
      << " is not less than half the smallest box edge (" << half
      << "); a particle that moves that far in one step is a blow-up the run could not detect";
    throw ConfigError(m.str());
  }
  // skin auto: only skins that fit are tried (backends/tuning.h), so the cutoff alone must.
  const double skin = cfg.model.neighbor.skin_auto ? 0.0 : cfg.model.neighbor.skin;
  const auto& terms = cfg.model.force_field.pair_terms;
  for (size_t t = 0; t < terms.size(); ++t) {
    const double rc = terms[t].max_cutoff();
    if (rc + skin > half) {
      const std::string key = "force_field.pair[" + std::to_string(t) + "].cutoff";
      auto it = cfg.locations.find(key);
      std::ostringstream m;
      m << (it != cfg.locations.end() ? it->second : cfg.path) << ": " << key << ": cutoff " << rc << " plus skin "
        << skin << " is larger than half the smallest box edge (" << half
        << "); minimum image needs a larger box or a shorter cutoff";
      throw ConfigError(m.str());
    }
  }
}

void validate_pair_lists(const RunConfig& cfg, size_t n) {
  const auto& lists = cfg.model.force_field.pair_lists;
  for (size_t k = 0; k < lists.size(); ++k) {
    const std::vector<Bond>& pairs = lists[k].data->pairs;
    const PairListSource* src = k < cfg.pair_list_sources.size() ? &cfg.pair_list_sources[k] : nullptr;
    auto fail = [&](size_t p, const std::string& what) {
      std::ostringstream m;
      if (src && p < src->lines.size())
        m << src->file << ":" << src->lines[p];
      else
        m << cfg.path;
      m << ": force_field.pair_lists[" << k << "] (" << lists[k].name << "): pair (" << pairs[p].i << ", " << pairs[p].j
        << "): " << what;
      throw ConfigError(m.str());
    };
    std::vector<std::pair<std::pair<int, int>, size_t>> sorted;
    sorted.reserve(pairs.size());
    for (size_t p = 0; p < pairs.size(); ++p) {
      const Bond& b = pairs[p];
      if (b.i < 0 || b.j < 0 || static_cast<size_t>(b.i) >= n || static_cast<size_t>(b.j) >= n)
        fail(p, "the system has " + std::to_string(n) + " particles, 0 to " + std::to_string(n == 0 ? 0 : n - 1));
      if (b.i == b.j) fail(p, "a particle cannot pair with itself");
      sorted.push_back({{std::min(b.i, b.j), std::max(b.i, b.j)}, p});
    }
    std::sort(sorted.begin(), sorted.end());
    for (size_t q = 1; q < sorted.size(); ++q)
      if (sorted[q].first == sorted[q - 1].first) {
        const size_t first = std::min(sorted[q].second, sorted[q - 1].second),
                     again = std::max(sorted[q].second, sorted[q - 1].second);
        fail(again,
             "listed twice (also " +
                 (src && first < src->lines.size() ? "at line " + std::to_string(src->lines[first]) : "earlier") +
                 "); each pair once per list");
      }
  }
}

Model make_model(const RunConfig& cfg, const BuiltSystem& sys) {
  Model m = cfg.model;
  m.topology = sys.topology;
  m.pulling = sys.pulling;
  return m;
}

void assign_velocities(SystemState& s, double temperature, uint64_t seed, const Units& units, double dof) {
  const size_t n = s.size();
  for (auto& v : s.velocity) v = {0, 0, 0};
  if (n == 0 || temperature <= 0) return;
  // A step index no integrator reaches, so these draws never repeat thermostat noise.
  const uint64_t step = ~uint64_t(0);
  double p[3] = {0, 0, 0}, mtot = 0;
  for (size_t i = 0; i < n; ++i) {
    const Vec3d g = gaussian3<double>(seed, step, static_cast<uint32_t>(i), kNoiseVelocities);
    const double sd = std::sqrt(units.kB * temperature * units.force_to_accel / s.mass[i]);
    s.velocity[i] = sd * g;
    p[0] += s.mass[i] * s.velocity[i].x;
    p[1] += s.mass[i] * s.velocity[i].y;
    p[2] += s.mass[i] * s.velocity[i].z;
    mtot += s.mass[i];
  }
  double ke2 = 0;  // 2 KE in mvv units
  for (size_t i = 0; i < n; ++i) {
    s.velocity[i] -= Vec3d{p[0] / mtot, p[1] / mtot, p[2] / mtot};
    ke2 += s.mass[i] * dot(s.velocity[i], s.velocity[i]);
  }
  const double target = dof * units.kB * temperature * units.force_to_accel;
  if (ke2 > 0) {
    const double scale = std::sqrt(target / ke2);
    for (auto& v : s.velocity) v = scale * v;
  }
}

void draw_velocities(SystemState& s, size_t first, double temperature, uint64_t seed, const Units& units) {
  if (!(temperature > 0)) return;
  const uint64_t step = ~uint64_t(0);  // as assign_velocities: never a step of the run
  for (size_t i = first; i < s.size(); ++i) {
    const Vec3d g = gaussian3<double>(seed, step, static_cast<uint32_t>(i), kNoiseVelocities);
    s.velocity[i] = std::sqrt(units.kB * temperature * units.force_to_accel / s.mass[i]) * g;
  }
}

namespace {

// A move of half a box or more can no longer be told from a shorter one the other way.
void validate_max_move(const RunConfig& cfg, const Box& box) {
  if (!box.periodic || cfg.minimize.algorithm == MinimizeAlgorithm::None) return;
  const double half = 0.5 * std::min({box.L.x, box.L.y, box.L.z});
  if (cfg.minimize.max_move < half) return;
  const std::string key = cfg.minimize.from_relax ? "system.relax.max_move" : "minimize.max_move";
  auto it = cfg.locations.find("minimize.max_move");
  std::ostringstream m;
  m << (it != cfg.locations.end() ? it->second : cfg.path) << ": " << key << ": " << cfg.minimize.max_move
    << " is not less than half the smallest box edge (" << half << ")";
  throw ConfigError(m.str());
}

}  // namespace

void minimize_system(SystemState& s, const RunConfig& cfg, const Topology& topology, const std::string& backend,
                     std::vector<std::string>& notes) {
  const MinimizeSpec& spec = cfg.minimize;
  if (spec.algorithm == MinimizeAlgorithm::None || s.size() == 0) return;
  const std::string key = spec.from_relax ? "system.relax" : "minimize";
  if (spec.from_relax)
    notes.push_back("minimize: system.relax is an alias of minimize: " + minimize_spec_text(spec) +
                    " (the capped steepest descent it always was); a minimize section runs FIRE (docs/minimize.md)");
  // Nothing is tuned for the minimiser (backends/tuning.h): its trials would step dynamics from
  // the very start it is there to relax.
  Model model = untuned_model(cfg.model, s.box);
  model.topology = topology;
  const bool show = cfg.output.progress == "on" || (cfg.output.progress == "auto" && isatty(STDERR_FILENO));
  MinimizeProgressLine line(spec, show);
  MinimizeReport report;
  try {
    std::unique_ptr<Backend> b;
    try {
      b = make_backend(backend, model, s);
    } catch (const SimulationBlowup&) {
      throw;
    } catch (const std::exception& e) {
      throw ConfigError(cfg.path + ": " + key + ": " + e.what());
    }
    report = minimize(*b, spec, cfg.model.units, std::ref(line));
    line.clear();
    // A stop signal: the front end ends before the run, writing nothing (StoppedBeforeRun).
    if (report.stop == MinimizeStop::Interrupted)
      stop_if_signalled(spec.from_relax ? "during system.relax, before the run began"
                                        : "during the minimisation, before the run began");
    SystemState out;
    b->get_state(out);
    s.position = out.position;
    s.image = out.image;
  } catch (const SimulationBlowup& e) {
    // Input, not a run: a minimisation that breaks a bond comes from the config's settings or start.
    throw ConfigError(cfg.path + ": " + key + ": the minimisation before the run failed: " + e.what() +
                      (spec.algorithm == MinimizeAlgorithm::SteepestDescent ? "; a smaller max_move may help" : ""));
  }
  notes.push_back(describe_minimization(report, spec, cfg.model.units));
}

BuiltSystem build_system(const RunConfig& cfg, const BuildOptions& options) {
  BuiltSystem b;
  bool from_file_velocities = false;
  SystemState& s = b.state;
  s.box.periodic = cfg.system.periodic;
  for (const TypeSpec& t : cfg.system.types) s.type_names.push_back(t.name);
  switch (cfg.system.source) {
    case SystemSource::Lattice:
      build_lattice(cfg, s);
      break;
    case SystemSource::Chains:
      build_chains(cfg, s, b.topology);
      break;
    case SystemSource::File: {
      StartStructure start = load_start_file(cfg);
      s = std::move(start.state);
      b.topology = std::move(start.topology);
      from_file_velocities = start.has_velocities;
      for (std::string& n : start.notes) b.notes.push_back("start file: " + n);
      repair_start_file_images(s, b.topology, b.notes);
      break;
    }
  }
  if (!cfg.system.periodic) s.box.periodic = false;
  if (s.size() + cfg.system.add_particles.size() == 0) {
    auto it = cfg.locations.find("system.file.path");
    throw ConfigError((it != cfg.locations.end() ? it->second : cfg.path) + ": system.file.path: '" +
                      cfg.system.file.path + "' holds no particles");
  }
  if (s.size() > static_cast<size_t>(kMaxParticles))
    throw ConfigError(cfg.path + ": system: " + std::to_string(s.size()) + " particles, more than the " +
                      std::to_string(kMaxParticles) + " pairmd can hold");
  validate_against_box(cfg, s.box);
  validate_pair_lists(cfg, s.size() + cfg.system.add_particles.size());
  validate_max_move(cfg, s.box);
  if (options.minimize)
    minimize_system(s, cfg, b.topology, options.minimize_backend.empty() ? cfg.backend : options.minimize_backend,
                    b.notes);
  const size_t from_build = s.size();
  add_listed_particles(cfg, s);
  const double T =
      cfg.system.velocity_temperature >= 0 ? cfg.system.velocity_temperature : cfg.model.integrator.temperature;
  const uint64_t seed = cfg.system.velocity_seed ? cfg.system.velocity_seed : cfg.model.integrator.seed;
  if (cfg.system.source != SystemSource::File || cfg.system.velocity_temperature >= 0) {
    assign_velocities(s, T, seed, cfg.model.units, degrees_of_freedom(cfg, s.size()));
  } else if (!from_file_velocities) {
    // A start file without velocities would start the run at T = 0, quenched: draw them unless
    // the config says to keep zeros.
    std::ostringstream note;
    note << "velocities: the start file has none; ";
    if (cfg.system.draw_missing_velocities) {
      assign_velocities(s, T, seed, cfg.model.units, degrees_of_freedom(cfg, s.size()));
      note << "drawn from Maxwell-Boltzmann at T = " << T << " " << cfg.model.units.temperature_unit() << " (seed "
           << seed << "; system.velocities.missing: zero keeps them at zero)";
    } else {
      note << "they start at zero (system.velocities.missing: zero)";
    }
    b.notes.push_back(note.str());
  } else if (s.size() > from_build && cfg.system.draw_missing_velocities) {
    // Particles added to a file's state (pairmd place-ions) have none: theirs are drawn.
    draw_velocities(s, from_build, T, seed, cfg.model.units);
    std::ostringstream note;
    note << "velocities: from the start file; the " << s.size() - from_build
         << " added particle(s) got theirs from Maxwell-Boltzmann at T = " << T << " "
         << cfg.model.units.temperature_unit();
    b.notes.push_back(note.str());
  }
  b.pulling = resolve_pulling(cfg, s);
  return b;
}

}  // namespace pairmd
