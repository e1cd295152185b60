#include "engine/config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "base/text.h"
#include "engine/ladder.h"
#include "engine/pair_list_file.h"
#include "kernels/dcs/map_registry.h"

namespace pairmd {

namespace {

// Where a node came from, for messages: "file:line:column", or "--set a.b=v" for overrides.
struct Context {
  std::string file;
  std::vector<std::pair<std::string, std::string>> overrides;

  std::string where(const YAML::Node& node, const std::string& path) const {
    for (const auto& [key, value] : overrides)
      if (key == path || path.rfind(key + ".", 0) == 0 || path.rfind(key + "[", 0) == 0)
        return "--set " + key + "=" + value;
    std::ostringstream s;
    s << file;
    if (node.IsDefined() && node.Mark().line >= 0) s << ":" << node.Mark().line + 1 << ":" << node.Mark().column + 1;
    return s.str();
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& path, const std::string& what) const {
    throw ConfigError(where(node, path) + ": " + (path.empty() ? "" : path + ": ") + what);
  }
};

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "nothing";
  if (n.IsScalar()) return "'" + printable(n.Scalar()) + "'";
  if (n.IsSequence()) return "a list";
  return "a mapping";
}

std::string join(std::initializer_list<const char*> items) {
  std::string s;
  for (const char* i : items) s += (s.empty() ? "" : ", ") + std::string(i);
  return s;
}

// "a, b and c" ("a or b" with `last` = " or "): names from a registry, for messages.
std::string join_names(const std::vector<std::string>& names, const char* last = " and ") {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  return s;
}

template <typename Registry, typename Keep>
std::vector<std::string> names_of(const Registry& registry, Keep keep) {
  std::vector<std::string> names;
  for (const auto& entry : registry)
    if (keep(entry)) names.push_back(entry.name);
  return names;
}

template <typename Registry>
std::vector<std::string> names_of(const Registry& registry) {
  return names_of(registry, [](const auto&) { return true; });
}

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A mapping being read: knows its allowed keys (anything else is an error, reported first),
// and reads typed, range-checked values with defaults.
class Map {
 public:
  Map(const Context& ctx, YAML::Node node, std::string path, std::initializer_list<const char*> keys)
      : ctx_(ctx), node_(node), path_(std::move(path)) {
    if (!node_.IsMap())
      ctx_.fail(node_, path_, "expected a mapping with keys " + join(keys) + ", got " + describe(node_));
    // yaml-cpp keeps both entries of a repeated key and reads the first: a second `dt:` further
    // down would be silently ignored, so it is an error here.
    std::map<std::string, int> line_of;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!it->first.IsScalar()) ctx_.fail(it->first, path_, "expected a key name, got " + describe(it->first));
      const std::string k = it->first.Scalar();
      bool ok = false;
      for (const char* a : keys) ok = ok || k == a;
      if (!ok) ctx_.fail(it->first, sub(printable(k)), "unknown key (expected one of: " + join(keys) + ")");
      const auto [first, fresh] = line_of.emplace(k, it->first.Mark().line + 1);
      if (!fresh)
        ctx_.fail(it->first, sub(k), "duplicate key (already given at line " + std::to_string(first->second) + ")");
    }
  }

  const Context& ctx() const { return ctx_; }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  bool has(const char* key) const { return static_cast<bool>(node_[key]); }
  YAML::Node node(const char* key) const { return node_[key]; }
  YAML::Node self() const { return node_; }
  std::string where(const char* key) const { return ctx_.where(has(key) ? node_[key] : node_, sub(key)); }

  [[noreturn]] void missing(const char* key, const std::string& what) const {
    ctx_.fail(node_, path_.empty() ? std::string(key) : path_,
              "missing required key '" + std::string(key) + "' (" + what + ")");
  }

  // A number; `lo`/`hi` bound it, strictly where `open` says so.
  double number(const char* key, double def, double lo, double hi, bool lo_open = false,
                const char* expected = nullptr) const {
    if (!has(key)) return def;
    return to_number(node_[key], sub(key), lo, hi, lo_open, expected);
  }
  double number_required(const char* key, double lo, double hi, bool lo_open, const char* expected) const {
    if (!has(key)) missing(key, expected);
    return to_number(node_[key], sub(key), lo, hi, lo_open, expected);
  }
  int64_t integer(const char* key, int64_t def, int64_t lo, int64_t hi) const {
    if (!has(key)) return def;
    return to_integer(node_[key], sub(key), lo, hi);
  }
  int64_t integer_required(const char* key, int64_t lo, int64_t hi) const {
    if (!has(key)) missing(key, range_text(lo, hi));
    return to_integer(node_[key], sub(key), lo, hi);
  }
  bool boolean(const char* key, bool def) const {
    if (!has(key)) return def;
    const YAML::Node n = node_[key];
    bool b;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, b))
      ctx_.fail(n, sub(key), "expected true or false, got " + describe(n));
    return b;
  }
  std::string string(const char* key, const std::string& def) const {
    if (!has(key)) return def;
    const YAML::Node n = node_[key];
    if (!n.IsScalar()) ctx_.fail(n, sub(key), "expected a string, got " + describe(n));
    return n.Scalar();
  }
  std::string choice(const char* key, const std::string& def, std::initializer_list<const char*> choices) const {
    return choice(key, def, std::vector<std::string>(choices.begin(), choices.end()));
  }
  // One of the names of a registry (names_of), in its order.
  std::string choice(const char* key, const std::string& def, const std::vector<std::string>& choices) const {
    if (!has(key)) return def;
    const YAML::Node n = node_[key];
    if (n.IsScalar())
      for (const std::string& c : choices)
        if (n.Scalar() == c) return c;
    ctx_.fail(n, sub(key), "expected one of " + join_names(choices, ", ") + ", got " + describe(n));
  }

  static std::string range_text(int64_t lo, int64_t hi) {
    std::ostringstream s;
    s << "an integer";
    if (hi == std::numeric_limits<int64_t>::max())
      s << " >= " << lo;
    else
      s << " in [" << lo << ", " << hi << "]";
    return s.str();
  }

  double to_number(const YAML::Node& n, const std::string& path, double lo, double hi, bool lo_open,
                   const char* expected) const {
    std::ostringstream want;
    if (expected)
      want << expected;
    else {
      want << "a number";
      if (hi == kInfinity && lo != -kInfinity)
        want << (lo_open ? " > " : " >= ") << lo;
      else if (lo == -kInfinity && hi != kInfinity)
        want << " <= " << hi;
      else if (lo != -kInfinity)
        want << " in " << (lo_open ? "(" : "[") << lo << ", " << hi << "]";
    }
    double v;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v))
      ctx_.fail(n, path, "expected " + want.str() + ", got " + describe(n));
    if (v < lo || (lo_open && v == lo) || v > hi) ctx_.fail(n, path, "expected " + want.str() + ", got " + n.Scalar());
    return v;
  }
  int64_t to_integer(const YAML::Node& n, const std::string& path, int64_t lo, int64_t hi) const {
    double v;
    // Accept 1e6 and 1000000 alike, but not 1.5 or 'ten'.
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !std::isfinite(v) || v != std::floor(v) ||
        std::fabs(v) > 9.0e15)
      ctx_.fail(n, path, "expected " + range_text(lo, hi) + ", got " + describe(n));
    const int64_t i = static_cast<int64_t>(v);
    if (i < lo || i > hi) ctx_.fail(n, path, "expected " + range_text(lo, hi) + ", got " + n.Scalar());
    return i;
  }

 private:
  const Context& ctx_;
  YAML::Node node_;
  std::string path_;
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

YAML::Node list_node(const Map& m, const char* key, bool required, const char* what) {
  if (!m.has(key)) {
    if (required) m.missing(key, what);
    return YAML::Node(YAML::NodeType::Sequence);
  }
  YAML::Node n = m.node(key);
  if (!n.IsSequence()) m.ctx().fail(n, m.sub(key), std::string("expected a list (") + what + "), got " + describe(n));
  return n;
}

int type_index(const Map& m, const char* key, const std::vector<TypeSpec>& types, int def) {
  if (!m.has(key)) {
    if (def >= 0) return def;
    m.missing(key, "a particle type name");
  }
  const std::string name = m.string(key, "");
  for (size_t i = 0; i < types.size(); ++i)
    if (types[i].name == name) return static_cast<int>(i);
  std::string names;
  for (const TypeSpec& t : types) names += (names.empty() ? "" : ", ") + t.name;
  m.ctx().fail(m.node(key), m.sub(key), "unknown particle type '" + name + "' (system.types has: " + names + ")");
}

void read_types(const Map& sys, SystemSpec& spec) {
  const YAML::Node list = list_node(sys, "types", true, "of {name, mass, charge}");
  if (list.size() == 0) sys.ctx().fail(list, sys.sub("types"), "expected at least one particle type");
  for (size_t i = 0; i < list.size(); ++i) {
    Map t(sys.ctx(), list[i], sys.sub("types") + "[" + std::to_string(i) + "]", {"name", "mass", "charge"});
    TypeSpec ts;
    if (!t.has("name")) t.missing("name", "a type name");
    ts.name = t.string("name", "");
    if (ts.name.empty()) t.ctx().fail(t.node("name"), t.sub("name"), "expected a non-empty name");
    for (const TypeSpec& other : spec.types)
      if (other.name == ts.name) t.ctx().fail(t.node("name"), t.sub("name"), "duplicate type name '" + ts.name + "'");
    ts.mass = t.number("mass", 1.0, 0.0, kInf, true);
    ts.charge = t.number("charge", 0.0, -kInf, kInf);
    spec.types.push_back(ts);
  }
}

void read_system(const Map& root, RunConfig& cfg) {
  if (!root.has("system")) root.missing("system", "what to simulate: lattice, chains or file");
  Map sys(root.ctx(), root.node("system"), "system",
          {"types", "boundary", "lattice", "chains", "file", "relax", "velocities", "add_particles"});
  SystemSpec& spec = cfg.system;
  read_types(sys, spec);
  spec.periodic = sys.choice("boundary", "periodic", {"periodic", "open"}) == "periodic";

  const int sources = sys.has("lattice") + sys.has("chains") + sys.has("file");
  if (sources != 1)
    sys.ctx().fail(sys.self(), "system",
                   "expected exactly one of lattice, chains, file (got " + std::to_string(sources) + ")");

  if (sys.has("lattice")) {
    spec.source = SystemSource::Lattice;
    Map l(sys.ctx(), sys.node("lattice"), "system.lattice", {"kind", "cells", "density", "type"});
    spec.lattice.kind = l.choice("kind", "fcc", {"fcc", "sc"}) == "fcc" ? LatticeKind::Fcc : LatticeKind::Sc;
    if (!l.has("cells")) l.missing("cells", "unit cells per direction: n or [nx, ny, nz]");
    const YAML::Node c = l.node("cells");
    if (c.IsSequence()) {
      if (c.size() != 3)
        l.ctx().fail(c, l.sub("cells"), "expected n or [nx, ny, nz], got a list of " + std::to_string(c.size()));
      for (int d = 0; d < 3; ++d) spec.lattice.cells[d] = static_cast<int>(l.to_integer(c[d], l.sub("cells"), 1, 4096));
    } else {
      const int n = static_cast<int>(l.integer("cells", 1, 1, 4096));
      spec.lattice.cells[0] = spec.lattice.cells[1] = spec.lattice.cells[2] = n;
    }
    spec.lattice.density = l.number_required("density", 0.0, kInf, true, "a number > 0");
    spec.lattice.type = type_index(l, "type", spec.types, 0);
    cfg.locations["system.lattice.cells"] = l.where("cells");
    const int64_t basis = spec.lattice.kind == LatticeKind::Fcc ? 4 : 1;
    const int64_t n = int64_t(spec.lattice.cells[0]) * spec.lattice.cells[1] * spec.lattice.cells[2] * basis;
    if (n > kMaxParticles)
      l.ctx().fail(c, l.sub("cells"),
                   std::to_string(spec.lattice.cells[0]) + " x " + std::to_string(spec.lattice.cells[1]) + " x " +
                       std::to_string(spec.lattice.cells[2]) + " cells make " + std::to_string(n) +
                       " particles, more than the " + std::to_string(kMaxParticles) + " pairmd can hold");
  }
  if (sys.has("chains")) {
    spec.source = SystemSource::Chains;
    Map c(sys.ctx(), sys.node("chains"), "system.chains",
          {"count", "length", "density", "bond", "bond_length", "monomer_type", "charged_every", "counterion_type",
           "min_distance", "seed"});
    ChainsSpec& ch = spec.chains;
    ch.count = static_cast<int>(c.integer_required("count", 1, 100000000));
    ch.length = static_cast<int>(c.integer_required("length", 1, 100000000));
    cfg.locations["system.chains.count"] = c.where("count");
    if (int64_t(ch.count) * ch.length > kMaxParticles)
      c.ctx().fail(c.node("count"), c.sub("count"),
                   std::to_string(ch.count) + " chains of " + std::to_string(ch.length) + " beads make more than the " +
                       std::to_string(kMaxParticles) + " particles pairmd can hold");
    ch.density = c.number_required("density", 0.0, kInf, true, "a number > 0");
    ch.bond_length = c.number("bond_length", 0.97, 0.0, kInf, true);
    ch.monomer_type = type_index(c, "monomer_type", spec.types, 0);
    ch.charged_every = static_cast<int>(c.integer("charged_every", 0, 0, 1000000));
    ch.counterion_type = c.has("counterion_type") ? type_index(c, "counterion_type", spec.types, -1) : -1;
    ch.min_distance = c.number("min_distance", 0.8, 0.0, kInf);
    // Closest packing holds sqrt(2) spheres of diameter d per d^3: beyond that no placement keeps
    // every pair d apart, and the 100 trials per bead would only burn time (hours, for millions).
    if (ch.density * ch.min_distance * ch.min_distance * ch.min_distance > std::sqrt(2.0)) {
      std::ostringstream m;
      m << "no arrangement keeps beads " << ch.min_distance << " apart at density " << ch.density
        << " (closest packing holds sqrt(2) per min_distance^3); use a smaller min_distance";
      c.ctx().fail(c.has("min_distance") ? c.node("min_distance") : c.self(), c.sub("min_distance"), m.str());
    }
    ch.seed = static_cast<uint64_t>(c.integer("seed", 1, 0, kMaxInt));
    if (ch.length > 1) {
      if (!c.has("bond")) c.missing("bond", "the name of a bond type in force_field.bonds");
      // Resolved against force_field.bonds once those are read.
      cfg.locations["system.chains.bond"] = c.where("bond");
      cfg.chains_bond_name = c.string("bond", "");
    }
  }
  if (sys.has("file")) {
    spec.source = SystemSource::File;
    Map f(sys.ctx(), sys.node("file"), "system.file", {"path", "frame", "format", "atom_style", "box"});
    if (!f.has("path")) f.missing("path", "a start file: H5MD, GSD, LAMMPS data or XYZ");
    spec.file.path = f.string("path", "");
    spec.file.frame = f.integer("frame", -1, -1, kMaxInt);
    spec.file.format = f.choice("format", "auto", {"auto", "h5md", "gsd", "lammps", "xyz"});
    spec.file.atom_style =
        f.choice("atom_style", "auto", {"auto", "atomic", "bond", "angle", "molecular", "charge", "full"});
    if (f.has("box")) {
      const YAML::Node b = f.node("box");
      if (!b.IsSequence() || b.size() != 3) f.ctx().fail(b, f.sub("box"), "expected [Lx, Ly, Lz], got " + describe(b));
      spec.file.box = {f.to_number(b[0], f.sub("box"), 0.0, kInf, true, "an edge length > 0"),
                       f.to_number(b[1], f.sub("box"), 0.0, kInf, true, "an edge length > 0"),
                       f.to_number(b[2], f.sub("box"), 0.0, kInf, true, "an edge length > 0")};
    }
    cfg.locations["system.file.path"] = f.where("path");
  }
  if (sys.has("relax")) {
    Map r(sys.ctx(), sys.node("relax"), "system.relax", {"steps", "max_move"});
    // Generated chains overlap a little: they are relaxed unless steps: 0 says otherwise.
    const int default_steps = spec.source == SystemSource::Chains ? 200 : 0;
    spec.relax.steps = static_cast<int>(r.integer("steps", default_steps, 0, 100000000));
    spec.relax.max_move = r.number("max_move", 0.02, 0.0, kInf, true);
  } else if (spec.source == SystemSource::Chains) {
    spec.relax.steps = 200;  // random walks overlap a little; push them apart before dynamics
  }
  const YAML::Node added = list_node(sys, "add_particles", false, "of {type: NAME, position: [x, y, z]}");
  for (size_t k = 0; k < added.size(); ++k) {
    Map p(sys.ctx(), added[k], "system.add_particles[" + std::to_string(k) + "]", {"type", "position"});
    AddedParticle a;
    a.type = type_index(p, "type", spec.types, -1);
    if (!p.has("position")) p.missing("position", "[x, y, z]");
    const YAML::Node x = p.node("position");
    if (!x.IsSequence() || x.size() != 3) p.ctx().fail(x, p.sub("position"), "expected [x, y, z], got " + describe(x));
    a.position = {p.to_number(x[0], p.sub("position"), -kInf, kInf, false, "a number"),
                  p.to_number(x[1], p.sub("position"), -kInf, kInf, false, "a number"),
                  p.to_number(x[2], p.sub("position"), -kInf, kInf, false, "a number")};
    spec.add_particles.push_back(a);
  }
  if (sys.has("velocities")) {
    Map v(sys.ctx(), sys.node("velocities"), "system.velocities", {"temperature", "seed", "missing"});
    spec.velocity_temperature = v.number("temperature", -1, 0.0, kInf);
    spec.velocity_seed = static_cast<uint64_t>(v.integer("seed", 0, 0, kMaxInt));
    spec.draw_missing_velocities = v.choice("missing", "draw", {"draw", "zero"}) == "draw";
  }
}

PairCoeffs lj_coeffs(const Map& e, const PairCoeffs& base) {
  PairCoeffs c = base;
  c.epsilon = e.number("epsilon", base.epsilon, 0.0, kInf);
  c.sigma = e.number("sigma", base.sigma, 0.0, kInf, true);
  c.rcut = e.number("cutoff", base.rcut, 0.0, kInf);
  return c;
}

void read_pair_term(const Map& t, const SystemSpec& sys, const Units& units, double temperature, ForceField& ff,
                    RunConfig& cfg, size_t index) {
  // Which keys apply is the potential's registry entry (potentials/registry.h), not its name.
  const std::vector<std::string> potentials = names_of(kPairPotentials);
  const std::string kind = t.choice("potential", "", potentials);
  if (kind.empty()) t.missing("potential", join_names(potentials, " or "));
  const PairPotentialInfo& info = *find_pair_potential(kind);
  PairTerm term;
  term.kind = info.kind;
  const int nt = ff.ntypes;
  PairCoeffs base;
  const bool charged = info.charged;
  if (info.fixed_cutoff || info.fixed_shift) {
    if (info.fixed_cutoff && t.has("cutoff"))
      t.ctx().fail(t.node("cutoff"), t.sub("cutoff"), std::string(info.fixed_cutoff) + "; remove this key");
    if (info.fixed_shift && t.has("shift"))
      t.ctx().fail(t.node("shift"), t.sub("shift"), std::string(info.fixed_shift) + "; remove this key");
  }
  if (!info.fixed_cutoff) base.rcut = t.number_required("cutoff", 0.0, kInf, true, "a number > 0");
  if (!info.fixed_shift) base.shift = t.boolean("shift", false);
  cfg.locations[t.path() + ".cutoff"] = t.where("cutoff");
  if (charged) {
    if (t.has("dielectric") && t.has("bjerrum_length"))
      t.ctx().fail(t.node("bjerrum_length"), t.sub("bjerrum_length"),
                   "give either dielectric or bjerrum_length, not both");
    if (t.has("bjerrum_length")) {
      // l_B = k_e q^2 / (eps_r k_B T): the prefactor k_e/eps_r = l_B k_B T.
      const double lb = t.number("bjerrum_length", 0.0, 0.0, kInf, true);
      if (!(temperature > 0))
        t.ctx().fail(t.node("bjerrum_length"), t.sub("bjerrum_length"), "needs integrator.temperature > 0");
      base.prefactor = lb * units.kB * temperature;
    } else {
      base.prefactor = units.coulomb / t.number("dielectric", 1.0, 0.0, kInf, true);
    }
    if (info.screened) {
      if (t.has("kappa") == t.has("debye_length"))
        t.ctx().fail(t.self(), t.path(), "expected exactly one of kappa (inverse screening length) or debye_length");
      base.kappa =
          t.has("kappa") ? t.number("kappa", 0, 0.0, kInf) : 1.0 / t.number("debye_length", 1, 0.0, kInf, true);
    } else if (t.has("kappa") || t.has("debye_length")) {
      t.ctx().fail(t.self(), t.path(),
                   "kappa/debye_length belong to " +
                       join_names(names_of(kPairPotentials, [](const PairPotentialInfo& p) { return p.screened; })) +
                       ", not " + kind);
    }
  } else {
    const std::string charged_names =
        join_names(names_of(kPairPotentials, [](const PairPotentialInfo& p) { return p.charged; }));
    for (const char* k : {"dielectric", "bjerrum_length", "kappa", "debye_length"})
      if (t.has(k)) t.ctx().fail(t.node(k), t.sub(k), "only for " + charged_names + " terms");
  }

  std::vector<PairCoeffs> table(nt * nt, base);
  std::vector<char> given(nt * nt, charged ? 1 : 0);
  std::vector<PairCoeffs> per_type(nt, base);
  std::vector<char> per_type_given(nt, 0);
  const std::string mixing = t.choice("mixing", "none", {"none", "geometric", "arithmetic"});
  const YAML::Node list =
      list_node(t, "coeffs", !charged, "of {types: [A, B], epsilon, sigma, cutoff} or {type: A, ...}");
  for (size_t k = 0; k < list.size(); ++k) {
    Map e(t.ctx(), list[k], t.sub("coeffs") + "[" + std::to_string(k) + "]",
          {"types", "type", "epsilon", "sigma", "cutoff"});
    if (charged && (e.has("epsilon") || e.has("sigma")))
      e.ctx().fail(e.self(), e.path(), "epsilon/sigma do not apply to " + kind + " (only cutoff per type pair)");
    if (info.fixed_cutoff && e.has("cutoff")) e.ctx().fail(e.node("cutoff"), e.sub("cutoff"), info.fixed_cutoff);
    if (e.has("type") == e.has("types"))
      e.ctx().fail(e.self(), e.path(), "expected exactly one of types: [A, B] or type: A");
    if (e.has("type")) {
      if (mixing == "none")
        e.ctx().fail(e.node("type"), e.sub("type"), "per-type coefficients need mixing: geometric or arithmetic");
      const int a = type_index(e, "type", sys.types, -1);
      per_type[a] = lj_coeffs(e, base);
      per_type_given[a] = 1;
    } else {
      const YAML::Node ty = e.node("types");
      if (!ty.IsSequence() || ty.size() != 2)
        e.ctx().fail(ty, e.sub("types"), "expected a pair of type names [A, B], got " + describe(ty));
      int ab[2];
      for (int s = 0; s < 2; ++s) {
        ab[s] = -1;
        for (size_t i = 0; i < sys.types.size(); ++i)
          if (ty[s].IsScalar() && sys.types[i].name == ty[s].Scalar()) ab[s] = static_cast<int>(i);
        if (ab[s] < 0) e.ctx().fail(ty[s], e.sub("types"), "unknown particle type " + describe(ty[s]));
      }
      const PairCoeffs c = lj_coeffs(e, base);
      table[ab[0] * nt + ab[1]] = table[ab[1] * nt + ab[0]] = c;
      given[ab[0] * nt + ab[1]] = given[ab[1] * nt + ab[0]] = 2;  // explicit pairs win over mixing
    }
  }
  for (int a = 0; a < nt; ++a)
    for (int b = 0; b < nt; ++b) {
      if (given[a * nt + b] == 2 || !per_type_given[a] || !per_type_given[b]) continue;
      PairCoeffs c = base;
      const PairCoeffs &pa = per_type[a], &pb = per_type[b];
      c.epsilon = std::sqrt(pa.epsilon * pb.epsilon);
      c.sigma = mixing == "geometric" ? std::sqrt(pa.sigma * pb.sigma) : 0.5 * (pa.sigma + pb.sigma);
      c.rcut = std::max(pa.rcut, pb.rcut);
      table[a * nt + b] = c;
      given[a * nt + b] = 1;
    }
  for (int a = 0; a < nt; ++a)
    for (int b = 0; b < nt; ++b)
      if (!given[a * nt + b])
        t.ctx().fail(t.node("coeffs"), t.sub("coeffs"),
                     "no coefficients for type pair (" + sys.types[a].name + ", " + sys.types[b].name +
                         "); give them as {types: [" + sys.types[a].name + ", " + sys.types[b].name +
                         "], ...} or per type with mixing (set epsilon: 0 to switch a pair off)");
  term.coeffs = table;
  (void)index;
  ff.pair_terms.push_back(term);
}

constexpr BondField kBondFields[] = {BondField::K, BondField::R0, BondField::Epsilon, BondField::MaxExtension};

// What a bond potential says a coefficient is (its registry entry), or null when it does not take it.
const char* bond_field_text(const BondPotentialInfo& info, BondField f) {
  switch (f) {
    case BondField::K:
      return info.k;
    case BondField::R0:
      return info.r0;
    case BondField::Epsilon:
      return info.epsilon;
    case BondField::MaxExtension:
      return info.max_extension;
  }
  return nullptr;
}

// Whether `value` is in the range of `f` for this potential (k > 0, r0 >= 0 or > 0, epsilon >= 0,
// max_extension > 0).
bool bond_field_ok(const BondPotentialInfo& info, BondField f, double value) {
  switch (f) {
    case BondField::K:
    case BondField::MaxExtension:
      return value > 0;
    case BondField::R0:
      return info.r0_positive ? value > 0 : value >= 0;
    case BondField::Epsilon:
      return value >= 0;
  }
  return false;
}

std::string not_taken(const BondPotentialInfo& info, const char* key) {
  std::string takes;
  for (const BondField f : kBondFields)
    if (bond_field_text(info, f)) takes += (takes.empty() ? "" : ", ") + std::string(bond_field_name(f));
  return std::string(key) + " does not apply to " + info.name + " (it takes " + takes + ")";
}

// A coefficient of a bond type or of a pair list (per term), checked against its range.
double bond_field_value(const Map& m, const char* key, const BondPotentialInfo& info, BondField f, bool required,
                        double def) {
  const char* what = bond_field_text(info, f);
  if (!m.has(key)) {
    if (required) m.missing(key, what);
    return def;
  }
  const double v = m.to_number(m.node(key), m.sub(key), -kInf, kInf, false, what);
  if (!bond_field_ok(info, f, v))
    m.ctx().fail(m.node(key), m.sub(key), std::string("expected ") + what + ", got " + m.node(key).Scalar());
  return v;
}

// force_field.pair_lists[k]: a bond potential, the coefficients every pair shares, the columns
// each pair gives itself, the pairs (inline or from a file) and the pair terms they are left out of.
void read_pair_list(const Map& t, RunConfig& cfg, size_t index) {
  ForceField& ff = cfg.model.force_field;
  PairList list;
  list.name = t.string("name", "pair_lists[" + std::to_string(index) + "]");
  const std::vector<std::string> potentials = names_of(kBondPotentials);
  const std::string kind = t.choice("potential", "", potentials);
  if (kind.empty()) t.missing("potential", join_names(potentials, " or "));
  const BondPotentialInfo& info = *find_bond_potential(kind);
  list.kind = info.kind;

  // Columns: the coefficients given per pair (default r0).
  if (t.has("columns")) {
    const YAML::Node c = t.node("columns");
    if (!c.IsSequence()) t.ctx().fail(c, t.sub("columns"), "expected a list of coefficient names, got " + describe(c));
    for (const YAML::Node& item : c) {
      bool found = false;
      for (const BondField f : kBondFields)
        if (item.IsScalar() && item.Scalar() == bond_field_name(f)) {
          if (!bond_field_text(info, f)) t.ctx().fail(item, t.sub("columns"), not_taken(info, bond_field_name(f)));
          if (std::find(list.columns.begin(), list.columns.end(), f) != list.columns.end())
            t.ctx().fail(item, t.sub("columns"), "column " + item.Scalar() + " given twice");
          list.columns.push_back(f);
          found = true;
        }
      if (!found)
        t.ctx().fail(item, t.sub("columns"), "expected one of k, r0, epsilon, max_extension, got " + describe(item));
    }
  } else {
    list.columns = {BondField::R0};
  }
  // Per-term coefficients: every coefficient the potential takes is given here or as a column.
  for (const BondField f : kBondFields) {
    const char* key = bond_field_name(f);
    const bool column = std::find(list.columns.begin(), list.columns.end(), f) != list.columns.end();
    if (!bond_field_text(info, f) || column) {
      if (t.has(key))
        t.ctx().fail(t.node(key), t.sub(key),
                     column ? std::string(key) + " is a column (given per pair); remove it here or from columns"
                            : not_taken(info, key));
      continue;
    }
    set_bond_field(list.defaults, f, bond_field_value(t, key, info, f, true, 0.0));
  }

  // The pairs: inline [[i, j, values...], ...] or a file of lines "i j values...".
  if (t.has("pairs") == t.has("file"))
    t.ctx().fail(t.self(), t.path(),
                 "expected exactly one of pairs (a list of [i, j, " +
                     std::string(bond_field_name(list.columns.empty() ? BondField::R0 : list.columns[0])) +
                     ", ...]) or file (a pair list file)");
  const size_t nc = list.columns.size();
  auto data = std::make_shared<PairListData>();
  PairListSource source;
  if (t.has("file")) {
    const std::string path = t.string("file", "");
    PairTable table = read_pair_table(path, nc);
    data->pairs = std::move(table.pairs);
    data->values = std::move(table.values);
    source.file = path;
    source.lines = std::move(table.lines);
  } else {
    const YAML::Node pairs = t.node("pairs");
    if (!pairs.IsSequence())
      t.ctx().fail(pairs, t.sub("pairs"), "expected a list of [i, j, values...], got " + describe(pairs));
    source.file = t.ctx().file;
    for (size_t k = 0; k < pairs.size(); ++k) {
      const YAML::Node row = pairs[k];
      const std::string path = t.sub("pairs") + "[" + std::to_string(k) + "]";
      if (!row.IsSequence() || row.size() != 2 + nc)
        t.ctx().fail(
            row, path,
            "expected [i, j" + std::string(nc ? ", " : "") +
                [&] {
                  std::string c;
                  for (size_t q = 0; q < nc; ++q) c += (q ? ", " : "") + std::string(bond_field_name(list.columns[q]));
                  return c;
                }() +
                "], got " + describe(row));
      const int i = static_cast<int>(t.to_integer(row[0], path, 0, kMaxParticles - 1));
      const int j = static_cast<int>(t.to_integer(row[1], path, 0, kMaxParticles - 1));
      data->pairs.push_back({i, j, static_cast<int>(k)});
      for (size_t q = 0; q < nc; ++q)
        data->values.push_back(t.to_number(row[2 + q], path, -kInf, kInf, false, "a number"));
      source.lines.push_back(row.Mark().line + 1);
    }
  }
  // Every pair's own coefficients in range.
  for (size_t k = 0; k < data->pairs.size(); ++k)
    for (size_t q = 0; q < nc; ++q) {
      const double v = data->values[k * nc + q];
      if (!bond_field_ok(info, list.columns[q], v)) {
        std::ostringstream m;
        m << source.file << ":" << source.lines[k] << ": " << t.path() << ": pair (" << data->pairs[k].i << ", "
          << data->pairs[k].j << "): " << bond_field_name(list.columns[q]) << " = " << v << ", expected "
          << bond_field_text(info, list.columns[q]);
        throw ConfigError(m.str());
      }
    }
  list.data = std::move(data);

  // The pair terms that leave these pairs out: all (default), none, or a list of indices.
  const size_t nterms = ff.pair_terms.size();
  const YAML::Node ex = t.node("exclude_from");
  if (!t.has("exclude_from") || (ex.IsScalar() && ex.Scalar() == "all")) {
    for (size_t q = 0; q < nterms; ++q) list.exclude_from.push_back(static_cast<int>(q));
  } else if (ex.IsSequence()) {
    for (const YAML::Node& item : ex) {
      const int64_t q = t.to_integer(item, t.sub("exclude_from"), 0, kMaxInt);
      if (q >= static_cast<int64_t>(nterms))
        t.ctx().fail(
            item, t.sub("exclude_from"),
            "there is no pair term " + std::to_string(q) + " (force_field.pair has " + std::to_string(nterms) + ")");
      list.exclude_from.push_back(static_cast<int>(q));
    }
  } else if (!(ex.IsScalar() && ex.Scalar() == "none")) {
    t.ctx().fail(ex, t.sub("exclude_from"), "expected all, none or a list of pair term indices, got " + describe(ex));
  }
  cfg.locations[t.path() + ".pairs"] = t.where(t.has("file") ? "file" : "pairs");
  ff.pair_lists.push_back(std::move(list));
  cfg.pair_list_sources.push_back(std::move(source));
}

// `pulling`: a tethered and a pulled particle, a force ramp or a constant force (potentials/pulling.h).
void read_pulling(const Map& root, RunConfig& cfg) {
  if (!root.has("pulling")) return;
  Map m(root.ctx(), root.node("pulling"), "pulling",
        {"mode", "pulled", "tethered", "spring", "speed", "force", "direction", "anchor", "tether_spring",
         "tether_position", "start_step", "every"});
  PullSpec& p = cfg.pulling;
  const std::string mode = m.choice("mode", "", {"ramp", "constant"});
  if (mode.empty())
    m.missing("mode", "ramp (a spring whose anchor moves at constant speed) or constant (a constant force)");
  p.mode = mode == "ramp" ? PullMode::Ramp : PullMode::Constant;
  p.pulled = m.integer_required("pulled", 0, kMaxParticles - 1);
  cfg.locations["pulling.pulled"] = m.where("pulled");
  if (p.mode == PullMode::Ramp) {
    p.spring = m.number_required("spring", 0.0, kInf, true, "the spring constant k_s > 0 (energy/length^2)");
    p.speed = m.number_required("speed", -kInf, kInf, false, "the anchor's speed (length/time)");
    for (const char* k : {"force"})
      if (m.has(k)) root.ctx().fail(m.node(k), m.sub(k), "force is for mode constant; a ramp takes spring and speed");
  } else {
    p.force = m.number_required("force", -kInf, kInf, false, "the force f (energy/length) along direction");
    for (const char* k : {"spring", "speed"})
      if (m.has(k))
        root.ctx().fail(m.node(k), m.sub(k), std::string(k) + " is for mode ramp; a constant force takes force");
  }
  auto vector = [&](const char* key, Vec3d& v) {
    if (!m.has(key)) return false;
    const YAML::Node x = m.node(key);
    if (!x.IsSequence() || x.size() != 3) root.ctx().fail(x, m.sub(key), "expected [x, y, z], got " + describe(x));
    v = {m.to_number(x[0], m.sub(key), -kInf, kInf, false, "a number"),
         m.to_number(x[1], m.sub(key), -kInf, kInf, false, "a number"),
         m.to_number(x[2], m.sub(key), -kInf, kInf, false, "a number")};
    return true;
  };
  p.has_direction = vector("direction", p.direction);
  if (p.has_direction && !(dot(p.direction, p.direction) > 0))
    root.ctx().fail(m.node("direction"), m.sub("direction"), "expected a non-zero vector");
  p.has_anchor = vector("anchor", p.anchor);
  if (m.has("tethered")) {
    p.tethered = m.integer("tethered", -1, 0, kMaxParticles - 1);
    if (p.tethered == p.pulled)
      root.ctx().fail(m.node("tethered"), m.sub("tethered"), "the tethered particle must not be the pulled one");
    p.tether_spring =
        m.number_required("tether_spring", 0.0, kInf, true, "the tether's spring constant k_t > 0 (energy/length^2)");
    p.has_tether_position = vector("tether_position", p.tether_position);
    cfg.locations["pulling.tethered"] = m.where("tethered");
  } else {
    for (const char* k : {"tether_spring", "tether_position"})
      if (m.has(k))
        root.ctx().fail(m.node(k), m.sub(k), std::string(k) + " needs a tethered particle (pulling.tethered)");
    if (!p.has_direction)
      root.ctx().fail(m.self(), "pulling",
                      "without a tethered particle the direction must be given (pulling.direction)");
  }
  p.start_step = m.integer("start_step", 0, 0, kMaxInt);
  p.every = m.integer("every", 0, 0, kMaxInt);
}

void read_force_field(const Map& root, RunConfig& cfg) {
  if (!root.has("force_field")) root.missing("force_field", "pair potentials and bonds");
  Map f(root.ctx(), root.node("force_field"), "force_field", {"pair", "bonds", "pair_lists", "exclusions"});
  ForceField& ff = cfg.model.force_field;
  ff.ntypes = static_cast<int>(cfg.system.types.size());
  const std::string ex = f.choice("exclusions", "bonds", {"none", "bonds", "angles"});
  ff.exclusions = ex == "none"    ? ExclusionPolicy::None
                  : ex == "bonds" ? ExclusionPolicy::Bonds
                                  : ExclusionPolicy::Angles;

  const YAML::Node bonds = list_node(f, "bonds", false, "of {name, potential, k, r0}");
  for (size_t k = 0; k < bonds.size(); ++k) {
    Map b(f.ctx(), bonds[k], "force_field.bonds[" + std::to_string(k) + "]",
          {"name", "potential", "k", "r0", "epsilon", "max_extension"});
    BondType bt;
    if (!b.has("name")) b.missing("name", "a bond type name");
    bt.name = b.string("name", "");
    for (const BondType& other : ff.bond_types)
      if (other.name == bt.name) b.ctx().fail(b.node("name"), b.sub("name"), "duplicate bond type '" + bt.name + "'");
    const std::vector<std::string> potentials = names_of(kBondPotentials);
    const std::string kind = b.choice("potential", "", potentials);
    if (kind.empty()) b.missing("potential", join_names(potentials, " or "));
    const BondPotentialInfo& info = *find_bond_potential(kind);
    bt.kind = info.kind;
    for (const BondField field : kBondFields) {
      const char* key = bond_field_name(field);
      if (!bond_field_text(info, field)) {
        if (b.has(key)) b.ctx().fail(b.node(key), b.sub(key), not_taken(info, key));
        continue;
      }
      set_bond_field(bt.coeffs, field, bond_field_value(b, key, info, field, true, 0.0));
    }
    ff.bond_types.push_back(bt);
  }
  if (!cfg.chains_bond_name.empty()) {
    int found = -1;
    for (size_t i = 0; i < ff.bond_types.size(); ++i)
      if (ff.bond_types[i].name == cfg.chains_bond_name) found = static_cast<int>(i);
    if (found < 0)
      throw ConfigError(cfg.locations["system.chains.bond"] + ": system.chains.bond: unknown bond type '" +
                        cfg.chains_bond_name + "' (define it in force_field.bonds)");
    cfg.system.chains.bond_type = found;
  }

  const YAML::Node pairs = list_node(f, "pair", false, "of pair terms");
  for (size_t k = 0; k < pairs.size(); ++k) {
    Map t(
        f.ctx(), pairs[k], "force_field.pair[" + std::to_string(k) + "]",
        {"potential", "cutoff", "shift", "coeffs", "mixing", "dielectric", "bjerrum_length", "kappa", "debye_length"});
    read_pair_term(t, cfg.system, cfg.model.units, cfg.model.integrator.temperature, ff, cfg, k);
  }
  const YAML::Node lists = list_node(f, "pair_lists", false, "of pair lists: {name, potential, pairs or file, ...}");
  for (size_t k = 0; k < lists.size(); ++k) {
    Map t(f.ctx(), lists[k], "force_field.pair_lists[" + std::to_string(k) + "]",
          {"name", "potential", "k", "r0", "epsilon", "max_extension", "columns", "pairs", "file", "exclude_from"});
    read_pair_list(t, cfg, k);
  }
}

void read_integrator(const Map& root, RunConfig& cfg) {
  if (!root.has("integrator")) root.missing("integrator", "kind, dt, temperature, friction, seed");
  Map m(root.ctx(), root.node("integrator"), "integrator",
        {"kind", "dt", "temperature", "friction", "seed", "max_step_displacement"});
  IntegratorSettings& s = cfg.model.integrator;
  const IntegratorInfo& info = *find_integrator(m.choice("kind", kIntegrators[0].name, names_of(kIntegrators)));
  s.kind = info.kind;
  s.dt = m.number_required("dt", 0.0, kInf, true, "a time step > 0");
  if (info.thermostat) {
    s.temperature = m.number_required("temperature", 0.0, kInf, false, "a temperature >= 0");
  } else {
    s.temperature = m.number("temperature", 0.0, 0.0, kInf);
  }
  s.friction = m.number("friction", 1.0, 0.0, kInf, true);
  s.seed = static_cast<uint64_t>(m.integer("seed", 1, 0, kMaxInt));
  cfg.model.max_step_displacement = m.number("max_step_displacement", 0.5, 0.0, kInf, true);
}

void read_output(const Map& root, RunConfig& cfg) {
  OutputSpec& o = cfg.output;
  if (!root.has("output")) return;
  Map m(root.ctx(), root.node("output"), "output",
        {"prefix", "thermo_every", "progress", "trajectory", "gsd", "checkpoint_every"});
  o.prefix = m.string("prefix", o.prefix);
  o.thermo_every = m.integer("thermo_every", o.thermo_every, 1, kMaxInt);
  o.progress = m.choice("progress", "auto", {"auto", "on", "off"});
  o.checkpoint_every = m.integer("checkpoint_every", 0, 0, kMaxInt);
  if (m.has("trajectory")) {
    Map t(root.ctx(), m.node("trajectory"), "output.trajectory",
          {"every", "velocities_every", "forces_every", "observables_every", "compression", "flush_seconds"});
    TrajectorySpec& tr = o.trajectory;
    tr.every = t.integer("every", 0, 0, kMaxInt);
    tr.velocities_every = t.integer("velocities_every", 0, 0, kMaxInt);
    tr.forces_every = t.integer("forces_every", 0, 0, kMaxInt);
    tr.observables_every = t.integer("observables_every", 0, 0, kMaxInt);
    tr.compression = static_cast<int>(t.integer("compression", 0, 0, 9));
    tr.flush_seconds = t.number("flush_seconds", 10.0, 0.0, kInf);
  }
  if (m.has("gsd")) {
    Map g(root.ctx(), m.node("gsd"), "output.gsd", {"every", "velocities", "flush_seconds"});
    o.gsd.every = g.integer_required("every", 1, kMaxInt);
    o.gsd.velocities = g.boolean("velocities", false);
    o.gsd.flush_seconds = g.number("flush_seconds", 10.0, 0.0, kInf);
  }
}

void read_replicas(const Map& root, RunConfig& cfg) {
  if (!root.has("replicas")) return;
  Map m(root.ctx(), root.node("replicas"), "replicas",
        {"count", "mode", "temperatures", "min_temperature", "max_temperature", "exchange_every", "seed"});
  ReplicaSpec& r = cfg.replicas;
  cfg.locations["replicas.count"] = m.where(m.has("count") ? "count" : "temperatures");
  r.exchange = m.choice("mode", "exchange", {"independent", "exchange"}) == "exchange";
  r.exchange_every = m.integer("exchange_every", 1000, 1, kMaxInt);
  r.seed = static_cast<uint64_t>(m.integer("seed", 0, 0, kMaxInt));
  const bool listed = m.has("temperatures"), range = m.has("min_temperature") || m.has("max_temperature");
  if (!r.exchange) {
    for (const char* k : {"temperatures", "min_temperature", "max_temperature"})
      if (m.has(k))
        m.ctx().fail(m.node(k), m.sub(k),
                     "independent replicas all run at integrator.temperature (a ladder needs mode: exchange)");
    r.count = static_cast<int>(m.integer_required("count", 1, 1 << 20));
    return;
  }
  if (cfg.model.integrator.kind == IntegratorKind::VelocityVerlet)
    m.ctx().fail(m.has("mode") ? m.node("mode") : m.self(), m.sub("mode"),
                 "temperature replica exchange needs a thermostat (integrator.kind langevin or brownian), not NVE");
  if (listed && range)
    m.ctx().fail(
        m.node("temperatures"), m.sub("temperatures"),
        "give either temperatures (a list) or min_temperature and max_temperature (a geometric ladder), not both");
  if (listed) {
    const YAML::Node t = m.node("temperatures");
    if (!t.IsSequence() || t.size() == 0)
      m.ctx().fail(t, m.sub("temperatures"), "expected a list of temperatures in increasing order, got " + describe(t));
    for (size_t k = 0; k < t.size(); ++k) {
      const std::string path = m.sub("temperatures") + "[" + std::to_string(k) + "]";
      const double v = m.to_number(t[k], path, 0.0, kInf, true, nullptr);
      if (k > 0 && !(v > r.temperatures.back()))
        m.ctx().fail(t[k], path,
                     "the ladder must increase: " + t[k].Scalar() + " is not above temperatures[" +
                         std::to_string(k - 1) + "] = " + t[k - 1].Scalar());
      r.temperatures.push_back(v);
    }
    r.count = static_cast<int>(m.integer("count", static_cast<int64_t>(t.size()), 1, 1 << 20));
    if (r.count != static_cast<int>(t.size()))
      m.ctx().fail(m.node("count"), m.sub("count"),
                   "count is " + std::to_string(r.count) + " but temperatures lists " + std::to_string(t.size()));
    return;
  }
  if (!m.has("min_temperature") || !m.has("max_temperature"))
    m.missing(m.has("min_temperature") ? "max_temperature" : "min_temperature",
              "a ladder: temperatures [T0, T1, ...] or min_temperature and max_temperature (geometric)");
  r.count = static_cast<int>(m.integer_required("count", 1, 1 << 20));
  const double lo = m.number_required("min_temperature", 0.0, kInf, true, nullptr);
  const double hi = m.number("max_temperature", lo, 0.0, kInf, true);
  if (r.count > 1 && !(hi > lo))
    m.ctx().fail(m.node("max_temperature"), m.sub("max_temperature"),
                 "expected a number above min_temperature (" + m.node("min_temperature").Scalar() + "), got " +
                     m.node("max_temperature").Scalar());
  r.temperatures = geometric_ladder(lo, hi, r.count);
  r.geometric = true;
}

void read_analysis(const Map& root, RunConfig& cfg) {
  if (!root.has("analysis")) return;
  Map a(root.ctx(), root.node("analysis"), "analysis", {"potential_map"});
  if (!a.has("potential_map")) return;
  Map m(root.ctx(), a.node("potential_map"), "analysis.potential_map",
        {"every", "spacing", "region", "padding", "kernel", "min_distance", "method", "boundary", "msm_cutoff",
         "msm_grid_spacing", "msm_order", "error_samples"});
  PotentialMapSpec& p = cfg.potential_map;
  p.every = m.integer_required("every", 1, kMaxInt);
  p.spacing = m.number_required("spacing", 0.0, kInf, true, "a lattice spacing > 0");
  cfg.locations["analysis.potential_map.spacing"] = m.where("spacing");
  p.region = m.choice("region", "box", {"box", "particles"});
  p.padding = m.number("padding", 5.0, 0.0, kInf);
  p.kernel = m.choice("kernel", "auto", map_kernel_names());
  p.min_distance = m.number("min_distance", 0.0, 0.0, kInf);
  p.method = m.choice("method", "exact", map_method_names());
  p.boundary = m.choice("boundary", "open", {"open", "periodic"});
  p.msm_cutoff = m.number("msm_cutoff", 0.0, 0.0, kInf);
  p.msm_grid_spacing = m.number("msm_grid_spacing", 0.0, 0.0, kInf);
  p.msm_order = static_cast<int>(m.integer("msm_order", 6, 4, 6));
  if (p.msm_order == 5)
    root.ctx().fail(m.node("msm_order"), m.sub("msm_order"), "expected 4 (cubic) or 6 (quintic), got 5");
  p.error_samples = static_cast<int>(m.integer("error_samples", 256, 0, 1000000));
  if (p.boundary == "periodic" && !cfg.system.periodic)
    root.ctx().fail(m.node("boundary"), m.sub("boundary"),
                    "periodic needs a periodic system (system.boundary is open)");
  if (p.boundary == "periodic" && p.method == "exact")
    root.ctx().fail(m.node(m.has("method") ? "method" : "boundary"), m.sub("method"),
                    "the exact sum counts no periodic images; boundary periodic needs method msm or auto");
}

// yaml-cpp shares an aliased node (*name) instead of copying it, so a few lines of anchors can
// stand for billions of nodes, and every walk over the document would visit them all. Documents
// are walked once first, counting nodes as aliases expand them: a document without aliases has
// at most one node per byte of its text; aliases may add a million.
constexpr size_t kAliasNodes = 1000000;

// Counts the nodes of `n` (aliases expanded) against `left`; false when they run out.
bool count_nodes(const YAML::Node& n, size_t& left) {
  if (left == 0) return false;
  --left;
  if (n.IsSequence())
    for (const YAML::Node& item : n)
      if (!count_nodes(item, left)) return false;
  if (n.IsMap())
    for (auto it = n.begin(); it != n.end(); ++it)
      if (!count_nodes(it->first, left) || !count_nodes(it->second, left)) return false;
  return true;
}

// The message when `root` (of `bytes` of text) expands past the bound: "" when it does not, else
// "LINE:COLUMN: KEY: ..." of the top-level key where the count ran out (`what`: "document").
std::string alias_expansion(const YAML::Node& root, size_t bytes, const char* what) {
  const size_t limit = bytes + kAliasNodes;
  size_t left = limit;
  std::ostringstream s;
  const std::string why = std::string("YAML aliases (*name) expand the ") + what + " past " + std::to_string(limit) +
                          " nodes, more than a config has; pairmd refuses it (an alias bomb?)";
  if (!root.IsMap()) {
    if (count_nodes(root, left)) return "";
    s << root.Mark().line + 1 << ":" << root.Mark().column + 1 << ": " << why;
    return s.str();
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (count_nodes(it->first, left) && count_nodes(it->second, left)) continue;
    s << it->first.Mark().line + 1 << ":" << it->first.Mark().column + 1 << ": "
      << (it->first.IsScalar() ? printable(it->first.Scalar()) + ": " : "") << why;
    return s.str();
  }
  return "";
}

// Applies "a.b.c=value" to the document: maps are created on the way, list items are named by
// their index ("force_field.pair.0.cutoff=3").
void apply_override(YAML::Node& root, const std::string& spec, RunConfig& cfg) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError("--set " + spec + ": expected key.path=value");
  const std::string path = spec.substr(0, eq), value = spec.substr(eq + 1);
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + spec + ": the value is not valid YAML: " + printable(e.msg));
  }
  size_t left = value.size() + kAliasNodes;
  if (!count_nodes(parsed, left))
    throw ConfigError("--set " + spec + ": YAML aliases (*name) expand the value past " +
                      std::to_string(value.size() + kAliasNodes) +
                      " nodes, more than a config has; pairmd refuses it (an alias bomb?)");
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) {
    if (p.empty()) throw ConfigError("--set " + spec + ": empty component in key path");
    parts.push_back(p);
  }
  YAML::Node cur;
  cur.reset(root);
  std::string display;  // the config path in the form messages use: force_field.pair[0].cutoff
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    const bool last = i + 1 == parts.size();
    if (cur.IsSequence()) {
      char* end = nullptr;
      const long idx = std::strtol(p.c_str(), &end, 10);
      const std::string here = display.empty() ? "the document" : display;
      if (*end)
        throw ConfigError("--set " + spec + ": " + here + " is a list, not a mapping: it has no key '" + printable(p) +
                          "'");
      if (idx < 0 || static_cast<size_t>(idx) >= cur.size())
        throw ConfigError("--set " + spec + ": " + here + " is a list of " + std::to_string(cur.size()) +
                          " items: it has no item " + p);
      display += "[" + p + "]";
      if (last)
        cur[idx] = parsed;
      else {
        YAML::Node next = cur[idx];
        cur.reset(next);
      }
    } else {
      if (cur.IsDefined() && !cur.IsNull() && !cur.IsMap())
        throw ConfigError("--set " + spec + ": " + (display.empty() ? "the document" : display) + " is " +
                          describe(cur) + ", not a mapping: it has no key '" + printable(p) + "'");
      display += (display.empty() ? "" : ".") + p;
      if (last)
        cur[p] = parsed;
      else {
        YAML::Node next = cur[p];
        cur.reset(next);
      }
    }
  }
  cfg.overrides.emplace_back(display, value);
  cfg.override_specs.push_back(path + "=" + value);
}

// Compact text of a node for difference lines: scalars as they are, the rest as flow YAML.
std::string brief(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "(not set)";
  if (n.IsScalar()) return n.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << n;
  return e.c_str();
}

void differences(const YAML::Node& a, const YAML::Node& b, const std::string& path, std::vector<std::string>& out) {
  const bool a_set = a.IsDefined() && !a.IsNull(), b_set = b.IsDefined() && !b.IsNull();
  if (a_set && b_set && a.IsMap() && b.IsMap()) {
    std::vector<std::string> keys;
    for (const YAML::Node* m : {&a, &b})
      for (auto it = m->begin(); it != m->end(); ++it) {
        const std::string k = it->first.Scalar();
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
      }
    for (const std::string& k : keys) differences(a[k], b[k], path.empty() ? k : path + "." + k, out);
    return;
  }
  if (a_set && b_set && a.IsSequence() && b.IsSequence() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) differences(a[i], b[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  const std::string x = brief(a), y = brief(b);
  if (x != y) out.push_back((path.empty() ? std::string("(document)") : path) + ": " + x + " -> " + y);
}

YAML::Node document(const std::string& text, const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(std::string("YAML syntax error: ") + printable(e.msg));
  }
  const std::string bomb = alias_expansion(root, text.size(), "document");
  if (!bomb.empty()) throw ConfigError("line " + bomb);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  RunConfig scratch;
  for (const std::string& o : overrides) apply_override(root, o, scratch);
  return root;
}

// yaml-cpp 0.7 accepts a quoted string that is never closed: it runs to the end of the file and
// swallows every key after it (`title: "abc` leaves nothing but a title). Each quoted scalar of
// the document (keys too) must find its closing quote in the text.
void check_quotes_closed(const YAML::Node& node, const std::string& text, const std::string& name) {
  auto check = [&](const YAML::Node& n) {
    if (!n.IsScalar() || n.Mark().pos < 0) return;
    size_t p = static_cast<size_t>(n.Mark().pos);
    // Skip a tag or anchor in front of the value (`!!str "abc`, `&a 'x`).
    while (p < text.size() && (text[p] == '!' || text[p] == '&')) {
      while (p < text.size() && text[p] != ' ' && text[p] != '\t' && text[p] != '\n') ++p;
      while (p < text.size() && (text[p] == ' ' || text[p] == '\t')) ++p;
    }
    if (p >= text.size() || (text[p] != '"' && text[p] != '\'')) return;
    const char q = text[p];
    for (size_t k = p + 1; k < text.size(); ++k) {
      if (q == '"' && text[k] == '\\') {
        ++k;  // an escape: \" does not close the string
      } else if (text[k] == q) {
        if (q == '\'' && k + 1 < text.size() && text[k + 1] == '\'') {
          ++k;  // '' is a quote inside a single-quoted string
          continue;
        }
        return;
      }
    }
    std::ostringstream s;
    s << name << ":" << n.Mark().line + 1 << ":" << n.Mark().column + 1 << ": YAML syntax error: the string opened by "
      << (q == '"' ? "\"" : "'") << " here is never closed";
    throw ConfigError(s.str());
  };
  if (node.IsScalar()) check(node);
  if (node.IsSequence())
    for (const YAML::Node& item : node) check_quotes_closed(item, text, name);
  if (node.IsMap())
    for (auto it = node.begin(); it != node.end(); ++it) {
      check(it->first);
      check_quotes_closed(it->second, text, name);
    }
}

}  // namespace

RunConfig parse_config(const std::string& text, const std::string& name, const std::vector<std::string>& overrides) {
  RunConfig cfg;
  cfg.path = name;
  cfg.text = text;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    std::ostringstream s;
    s << name << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": YAML syntax error: " << printable(e.msg);
    throw ConfigError(s.str());
  }
  const std::string bomb = alias_expansion(root, text.size(), "document");
  if (!bomb.empty()) throw ConfigError(name + ":" + bomb);
  check_quotes_closed(root, text, name);
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  for (const std::string& o : overrides) apply_override(root, o, cfg);

  Context ctx{name, cfg.overrides};
  try {
    Map m(ctx, root, "",
          {"title", "units", "backend", "steps", "system", "force_field", "force", "integrator", "neighbor", "output",
           "analysis", "pulling", "replicas"});
    cfg.title = m.string("title", "");
    cfg.model.units = m.choice("units", "lj", {"lj", "real"}) == "lj" ? Units::lj() : Units::real();
    cfg.backend = m.choice("backend", "auto", {"auto", "cpu", "cuda"});
    cfg.steps = m.integer("steps", 0, 0, kMaxInt);
    read_integrator(m, cfg);
    read_system(m, cfg);
    read_force_field(m, cfg);
    if (m.has("force")) {
      Map f(ctx, m.node("force"), "force", {"strategy"});
      cfg.model.strategy = f.choice("strategy", strategy_name(kDefaultStrategy), strategy_names(true));
    }
    if (m.has("neighbor")) {
      Map n(ctx, m.node("neighbor"), "neighbor", {"skin", "initial_capacity_per_particle"});
      cfg.model.neighbor.skin = n.number("skin", 0.3, 0.0, kInf);
      cfg.model.neighbor.initial_capacity_per_particle =
          static_cast<int>(n.integer("initial_capacity_per_particle", 0, 0, 100000));
      cfg.locations["neighbor.skin"] = n.where("skin");
    } else {
      cfg.locations["neighbor.skin"] = name;
    }
    read_output(m, cfg);
    read_analysis(m, cfg);
    read_replicas(m, cfg);
    read_pulling(m, cfg);
    const ForceField& ff = cfg.model.force_field;
    if (ff.pair_terms.empty() && ff.bond_types.empty() && ff.pair_lists.empty())
      ctx.fail(m.node("force_field"), "force_field", "expected at least one pair term, bond type or pair list");
  } catch (const YAML::Exception& e) {
    // yaml-cpp conversion errors that slipped past the checks above still get a location.
    std::ostringstream s;
    s << name << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": " << printable(e.msg);
    throw ConfigError(s.str());
  }
  return cfg;
}

std::string override_spec(const std::string& spec) {
  const size_t eq = spec.find('=');
  std::string key = spec.substr(0, eq), rest = eq == std::string::npos ? "" : spec.substr(eq);
  std::string raw;
  for (char c : key) {
    if (c == '[')
      raw += '.';
    else if (c != ']')
      raw += c;
  }
  return raw + rest;
}

std::vector<std::string> merge_overrides(const std::vector<std::string>& earlier,
                                         const std::vector<std::string>& later) {
  auto key = [](const std::string& spec) {
    const std::string s = override_spec(spec);
    return s.substr(0, s.find('='));
  };
  std::vector<std::string> out;
  for (const std::string& e : earlier) {
    bool replaced = false;
    for (const std::string& l : later) replaced = replaced || key(l) == key(e);
    if (!replaced) out.push_back(override_spec(e));
  }
  for (const std::string& l : later) out.push_back(override_spec(l));
  return out;
}

std::vector<std::string> config_differences(const std::string& text_a, const std::vector<std::string>& overrides_a,
                                            const std::string& text_b, const std::vector<std::string>& overrides_b,
                                            size_t max_lines) {
  std::vector<std::string> out;
  differences(document(text_a, overrides_a), document(text_b, overrides_b), "", out);
  if (out.size() > max_lines) {
    const size_t more = out.size() - max_lines;
    out.resize(max_lines);
    out.push_back("... and " + std::to_string(more) + " more");
  }
  return out;
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw ConfigError("cannot open config file '" + path + "': " + std::strerror(errno));
  // A directory opens and reads as empty on Linux, which would read as a config with no keys.
  if (S_ISDIR(st.st_mode)) throw ConfigError("cannot read config file '" + path + "': it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot open config file '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ConfigError("cannot read config file '" + path + "': " + std::strerror(errno));
  return parse_config(ss.str(), path, overrides);
}

}  // namespace pairmd
