// The `system` section: types, boundary, the source (lattice, chains, file), relax (the older
// spelling of `minimize`: config_minimize.cpp), velocities, added particles.
#include "engine/config_schema.h"

namespace pairmd::config {

namespace {

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

void read_lattice(const Map& sys, RunConfig& cfg) {
  SystemSpec& spec = cfg.system;
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

// The bonded types of the chains are names, resolved against force_field.bonds, .angles and
// .dihedrals once those are read: a bond between consecutive beads, angles along every three,
// dihedrals along every four.
void read_chain_bonded_names(const Map& c, const ChainsSpec& ch, RunConfig& cfg) {
  if (ch.length > 1) {
    if (!c.has("bond")) c.missing("bond", "the name of a bond type in force_field.bonds");
    cfg.locations["system.chains.bond"] = c.where("bond");
    cfg.chains_bond_name = c.string("bond", "");
  }
  cfg.chains_angle_name = c.string("angle", "");
  cfg.chains_dihedral_name = c.string("dihedral", "");
  cfg.locations["system.chains.angle"] = c.where("angle");
  cfg.locations["system.chains.dihedral"] = c.where("dihedral");
}

void read_chains(const Map& sys, RunConfig& cfg) {
  SystemSpec& spec = cfg.system;
  spec.source = SystemSource::Chains;
  Map c(sys.ctx(), sys.node("chains"), "system.chains",
        {"count", "length", "density", "bond", "angle", "dihedral", "bond_length", "monomer_type", "charged_every",
         "counterion_type", "min_distance", "seed"});
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
  read_chain_bonded_names(c, ch, cfg);
}

void read_file_source(const Map& sys, RunConfig& cfg) {
  SystemSpec& spec = cfg.system;
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

// The older spelling of `minimize` (config_minimize.cpp): its capped steepest descent, as it
// always was; the log says so.
void read_relax(const Map& sys, RunConfig& cfg) {
  Map r(sys.ctx(), sys.node("relax"), "system.relax", {"steps", "max_move"});
  MinimizeSpec& m = cfg.minimize;
  m.from_relax = true;
  m.max_iterations = r.integer("steps", cfg.system.source == SystemSource::Chains ? 200 : 0, 0, 100000000);
  m.algorithm = m.max_iterations > 0 ? MinimizeAlgorithm::SteepestDescent : MinimizeAlgorithm::None;
  m.max_move = r.number("max_move", 0.02, 0.0, kInf, true);
  m.ftol = m.etol = 0.0;
  m.max_evaluations = m.max_iterations + 1;
  cfg.locations["minimize.max_move"] = r.where("max_move");
}

void read_added_particles(const Map& sys, SystemSpec& spec) {
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
}

}  // namespace

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
  if (sys.has("lattice")) read_lattice(sys, cfg);
  if (sys.has("chains")) read_chains(sys, cfg);
  if (sys.has("file")) read_file_source(sys, cfg);
  if (sys.has("relax")) read_relax(sys, cfg);
  read_added_particles(sys, spec);
  if (sys.has("velocities")) {
    Map v(sys.ctx(), sys.node("velocities"), "system.velocities", {"temperature", "seed", "missing"});
    spec.velocity_temperature = v.number("temperature", -1, 0.0, kInf);
    spec.velocity_seed = static_cast<uint64_t>(v.integer("seed", 0, 0, kMaxInt));
    spec.draw_missing_velocities = v.choice("missing", "draw", {"draw", "zero"}) == "draw";
  }
}

}  // namespace pairmd::config
