// pairmd sop-build STRUCTURE -o OUT.yaml: the Self-Organized Polymer model of the proteins of a
// PDB or mmCIF file (one bead per residue at its C-alpha; FENE backbone, native contacts, soft
// repulsion: engine/sop_model.h), written as a config that `pairmd run` runs as it is, with its
// start file and pair-list files beside it (docs/proteins.md).
//
// The steps: read the options; refuse outputs that are the structure file itself; read the
// C-alpha traces and the disulfide bridges (io/structure_file.h: missing C-alpha atoms, chain
// gaps and alternate locations are errors unless an option decides them); build the model; check
// that none of the outputs exists (unless --overwrite); write the pair lists, the config and the
// start file; load the written config as `run` would, and report the native state.
#include <hdf5.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "backends/cpu_backend.h"
#include "cli/commands.h"
#include "engine/config.h"
#include "engine/resources.h"
#include "engine/sop_model.h"
#include "engine/system_builder.h"
#include "io/sop_files.h"
#include "io/structure_file.h"

namespace pairmd::cli {

namespace {

const char* kUsage =
    "usage: pairmd sop-build STRUCTURE.pdb|.cif[.gz] -o OUT.yaml [--chains A,B] [--gaps error|split]\n"
    "                        [--pull [TETHERED,PULLED]] [--copies K] [--integrator brownian|langevin] ...\n"
    "       (pairmd sop-build --help lists every option)\n";

struct SopBuildOptions {
  std::string structure, out, chains,
      gaps = "error", altloc = "error", disulfides = "bonds", max_bond, contact_cutoff, epsilon_h, epsilon_l, sigma,
      bond_k, max_extension, repulsion_cutoff, mass, copies, copy_gap, independent, integrator, temperature, dt,
      friction, skin, steps, thermo_every, trajectory_every, seed, pull, pull_mode, pull_speed, pull_spring, pull_force,
      tether_spring, pull_every;
  bool overwrite = false;
};

// A number of option `opt`, within [lo, hi] (strictly above lo when `open`).
double number(const std::string& opt, const std::string& text, double lo, double hi, bool open = false) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v < lo || (open && v == lo) || v > hi) {
    std::ostringstream m;
    m << opt << ": expected a number " << (open ? "> " : ">= ") << lo;
    if (hi < 1e300) m << " and <= " << hi;
    m << ", got '" << text << "'";
    throw std::invalid_argument(m.str());
  }
  return v;
}

long whole(const std::string& opt, const std::string& text, long lo, long hi) {
  const double v = number(opt, text, static_cast<double>(lo), static_cast<double>(hi));
  if (v != std::floor(v)) throw std::invalid_argument(opt + ": expected a whole number, got '" + text + "'");
  return static_cast<long>(v);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, sep);)
    if (!x.empty()) out.push_back(x);
  return out;
}

int read_options(const Args& args, SopBuildOptions& o) {
  CLI::App app{
      "Build the Self-Organized Polymer (SOP) model of the proteins of a PDB or mmCIF file: one bead per "
      "residue at its C-alpha, FENE bonds about the native distances, native contacts (12-6, minimum at "
      "each native distance), soft repulsion between all other pairs. Writes OUT.yaml, which `pairmd run` "
      "runs as it is, and beside it OUT.start.h5 (the beads) and OUT.backbone.pairs, OUT.native.pairs (the "
      "pair lists). The config's units are LAMMPS real: lengths in A, energies in kcal/mol, times in fs, "
      "temperatures in K, and so are the options (docs/proteins.md).",
      "pairmd sop-build"};
  prepare_app(app);
  const auto text = [&app](const char* name, std::string& value, const std::string& help) {
    app.add_option(name, value, help)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  };
  app.add_option("STRUCTURE", o.structure, "the structure: PDB or mmCIF, optionally gzipped");
  text("-o,--out", o.out, "the config to write (OUT.yaml); the other files are named after it (required)");
  text("--chains", o.chains, "the chains to take, comma-separated (default: every chain with amino acids)");
  text("--gaps", o.gaps, "error (default): a chain gap stops with an error; split: the pieces become chains");
  text("--altloc", o.altloc,
       "error (default): alternate locations of a C-alpha stop with an error; highest: take the one of highest "
       "occupancy");
  text("--disulfides", o.disulfides,
       "bonds (default): disulfide bridges (SSBOND records) are covalent bonds, as in SOP-GPU; none: left out "
       "(a reduced protein; a close pair is then a native contact)");
  text("--max-bond", o.max_bond, "consecutive C-alpha atoms farther apart are a chain gap (default 4.5 A)");
  text("--contact-cutoff", o.contact_cutoff, "native contacts: C-alpha atoms closer than this (default 8 A)");
  text("--epsilon-h", o.epsilon_h, "native contact depth eps_h (default 1.5 kcal/mol)");
  text("--epsilon-l", o.epsilon_l, "repulsion eps_l (default 1 kcal/mol)");
  text("--sigma", o.sigma, "repulsion sigma (default 3.8 A)");
  text("--bond-k", o.bond_k, "FENE k of the covalent bonds (default 20 kcal/(mol A^2) = 13.9 N/m, SOP-GPU's)");
  text("--max-extension", o.max_extension, "backbone FENE R0, the largest |r - r0| (default 2 A)");
  text("--repulsion-cutoff", o.repulsion_cutoff, "repulsion cutoff, not shifted (default 20 A, SOP-GPU's)");
  text("--mass", o.mass, "bead mass (default 110 amu)");
  text("--copies", o.copies,
       "copies of the protein on a cubic lattice in a periodic box (default 1: one, open boundaries)");
  text("--independent", o.independent,
       "K independent runs of the protein (a replicas section, mode independent: seed + k, each with its own files "
       "and force-extension log; without mpirun they run side by side on one GPU, docs/ensembles.md)");
  text("--copy-gap", o.copy_gap,
       "distance between the copies' bounding boxes (default: the repulsion cutoff, so they start out of reach)");
  text("--integrator", o.integrator, "brownian (overdamped, default) or langevin (underdamped)");
  text("--temperature", o.temperature, "temperature (default 300 K)");
  text("--dt", o.dt, "time step in fs (default 40 fs brownian, 20 fs langevin)");
  text("--friction", o.friction, "friction gamma in 1/fs (default 0.0167/fs brownian, 0.001/fs langevin)");
  text("--skin", o.skin, "neighbour-list skin (default 4 A)");
  text("--steps", o.steps, "steps of the run (default 100000)");
  text("--thermo-every", o.thermo_every, "thermo output every so many steps (default 1000)");
  text("--trajectory-every", o.trajectory_every, "trajectory frames every so many steps (default 1000)");
  text("--seed", o.seed, "seed of the noise (default 1)");
  app.add_option("--pull", o.pull,
                 "pull: TETHERED,PULLED bead indices (or 'ends': the first and last bead of the first chain); "
                 "the tethered bead is held by a spring, the pulled one by the pulling spring or force")
      ->expected(0, 1)
      ->default_str("")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  text("--pull-mode", o.pull_mode,
       "ramp (default: a spring whose anchor moves at --pull-speed) or constant (--pull-force)");
  text("--pull-speed", o.pull_speed, "anchor speed in A/fs (default 1e-5 A/fs = 1 m/s)");
  text("--pull-spring", o.pull_spring, "pulling spring k_s (default 0.07 kcal/(mol A^2), 0.05 N/m)");
  text("--pull-force", o.pull_force, "constant force (default 1 kcal/(mol A), 69.5 pN)");
  text("--tether-spring", o.tether_spring, "the tether's spring (default 10 kcal/(mol A^2))");
  text("--pull-every", o.pull_every, "rows of the pulling CSV every so many steps (default 100)");
  app.add_flag("--overwrite", o.overwrite, "replace files of an earlier sop-build with the same OUT");
  app.footer(std::string(kUsage) +
             "exit codes: 0 written, 2 bad input (nothing written), 1 a file could not be written");
  if (const int rc = parse_command_line(app, args, {"sop-build", kUsage, kUsage}); rc != kParsed) return rc;
  for (size_t k = 0; k < args.size(); ++k)
    if (args[k] == "--pull" && (k + 1 == args.size() || args[k + 1].rfind("-", 0) == 0)) o.pull = "ends";
  if (o.structure.empty() || o.out.empty()) {
    std::cerr << "pairmd sop-build: a STRUCTURE and -o OUT.yaml are required\n" << kUsage;
    return kExitUsage;
  }
  return kParsed;
}

// The model's parameters from the options (defaults: SopParameters).
SopParameters parameters(const SopBuildOptions& o) {
  SopParameters p;
  const double inf = 1e308;
  if (!o.contact_cutoff.empty()) p.contact_cutoff = number("--contact-cutoff", o.contact_cutoff, 0, inf, true);
  if (!o.epsilon_h.empty()) p.epsilon_h = number("--epsilon-h", o.epsilon_h, 0, inf);
  if (!o.epsilon_l.empty()) p.epsilon_l = number("--epsilon-l", o.epsilon_l, 0, inf);
  if (!o.sigma.empty()) p.sigma = number("--sigma", o.sigma, 0, inf, true);
  if (!o.bond_k.empty()) p.bond_k = number("--bond-k", o.bond_k, 0, inf, true);
  if (!o.max_extension.empty()) p.bond_max_extension = number("--max-extension", o.max_extension, 0, inf, true);
  if (!o.repulsion_cutoff.empty()) p.repulsion_cutoff = number("--repulsion-cutoff", o.repulsion_cutoff, 0, inf, true);
  if (!o.mass.empty()) p.mass = number("--mass", o.mass, 0, inf, true);
  if (!o.copies.empty()) p.copies = static_cast<int>(whole("--copies", o.copies, 1, 100000000));
  if (!o.independent.empty()) p.independent = static_cast<int>(whole("--independent", o.independent, 1, 1 << 16));
  if (p.independent > 1 && p.copies > 1)
    throw std::invalid_argument("--independent: runs of one protein each; --copies puts copies in one box (not both)");
  if (!o.copy_gap.empty()) p.copy_gap = number("--copy-gap", o.copy_gap, 0, inf);
  if (!o.integrator.empty()) {
    if (o.integrator != "brownian" && o.integrator != "langevin")
      throw std::invalid_argument("--integrator: expected brownian or langevin, got '" + o.integrator + "'");
    p.integrator = o.integrator;
  }
  if (!o.temperature.empty()) p.temperature = number("--temperature", o.temperature, 0, inf);
  if (!o.dt.empty()) p.dt_ps = 1e-3 * number("--dt", o.dt, 0, inf, true);  // fs, as the config
  if (!o.friction.empty()) p.friction_per_ps = 1e3 * number("--friction", o.friction, 0, inf, true);
  if (!o.skin.empty()) p.skin = number("--skin", o.skin, 0, inf);
  if (!o.steps.empty()) p.steps = whole("--steps", o.steps, 0, 1L << 60);
  if (!o.thermo_every.empty()) p.thermo_every = whole("--thermo-every", o.thermo_every, 1, 1L << 60);
  if (!o.trajectory_every.empty()) p.trajectory_every = whole("--trajectory-every", o.trajectory_every, 0, 1L << 60);
  if (!o.seed.empty()) p.seed = static_cast<unsigned long>(whole("--seed", o.seed, 0, 1L << 60));
  if (!o.pull_mode.empty()) {
    if (o.pull_mode != "ramp" && o.pull_mode != "constant")
      throw std::invalid_argument("--pull-mode: expected ramp or constant, got '" + o.pull_mode + "'");
    p.pull_mode = o.pull_mode;
  }
  if (!o.pull_speed.empty()) p.pull_speed = 1e3 * number("--pull-speed", o.pull_speed, -inf, inf);
  if (!o.pull_spring.empty()) p.pull_spring = number("--pull-spring", o.pull_spring, 0, inf, true);
  if (!o.pull_force.empty()) p.pull_force = number("--pull-force", o.pull_force, -inf, inf);
  if (!o.tether_spring.empty()) p.tether_spring = number("--tether-spring", o.tether_spring, 0, inf, true);
  if (!o.pull_every.empty()) p.pull_every = whole("--pull-every", o.pull_every, 1, 1L << 60);
  if (o.altloc != "error" && o.altloc != "highest")
    throw std::invalid_argument("--altloc: expected error or highest, got '" + o.altloc + "'");
  if (o.disulfides != "bonds" && o.disulfides != "none")
    throw std::invalid_argument("--disulfides: expected bonds or none, got '" + o.disulfides + "'");
  if (o.gaps != "error" && o.gaps != "split")
    throw std::invalid_argument("--gaps: expected error or split, got '" + o.gaps + "'");
  return p;
}

// The tethered and pulled beads of --pull: "ends" (the first chain's first and last bead) or
// "T,P" (bead indices of the first copy).
void pull_beads(const std::string& pull, const SopModel& m, SopParameters& p) {
  if (pull.empty()) return;
  if (pull == "ends") {
    p.tethered = m.chain_start[0];
    p.pulled = m.chain_start[1] - 1;
  } else {
    const std::vector<std::string> v = split(pull, ',');
    if (v.size() != 2)
      throw std::invalid_argument("--pull: expected TETHERED,PULLED (two bead indices) or nothing, got '" + pull + "'");
    p.tethered = whole("--pull", v[0], 0, m.beads_per_copy - 1);
    p.pulled = whole("--pull", v[1], 0, m.beads_per_copy - 1);
  }
  if (p.tethered == p.pulled) throw std::invalid_argument("--pull: the tethered and the pulled bead are the same");
}

bool exists(const std::string& f) { return access(f.c_str(), F_OK) == 0; }

// An output that is the structure file (the same file by device and inode: a link to it too)
// would replace what sop-build reads, --overwrite or not.
void refuse_outputs_that_are_inputs(const SopBuildOptions& o, const SopFiles& files) {
  for (const std::string& f : {o.out, files.start, files.backbone, files.native}) {
    std::error_code ec;
    if (std::filesystem::equivalent(f, o.structure, ec))
      throw std::invalid_argument("the output '" + f + "' is the structure file '" + o.structure +
                                  "' that sop-build reads; nothing was written. Choose another -o (OUT.yaml)");
  }
}

// What sop-build makes of its options: the parameters, the C-alpha traces, the model.
struct SopPlan {
  SopParameters p;
  CalphaStructure structure;
  SopModel model;
  SopFiles files;
};

// Reads the structure and builds the model; bad input throws StructureError or
// std::invalid_argument (exit 2, nothing written).
void plan(const SopBuildOptions& o, SopPlan& s) {
  s.files = sop_file_names(o.out);
  refuse_outputs_that_are_inputs(o, s.files);
  s.p = parameters(o);
  CalphaOptions co;
  if (!o.max_bond.empty()) co.max_bond = number("--max-bond", o.max_bond, 0, 1e308, true);
  co.split_at_gaps = o.gaps == "split";
  co.altloc_highest = o.altloc == "highest";
  co.chains = split(o.chains, ',');
  co.disulfides = o.disulfides == "bonds";
  s.structure = read_calpha_chains(o.structure, co);
  std::vector<std::vector<Vec3d>> chains;
  std::vector<std::string> names;
  std::vector<int> first_bead;
  int beads = 0;
  for (const CalphaChain& c : s.structure.chains) {
    names.push_back(c.name);
    chains.emplace_back();
    first_bead.push_back(beads);
    for (const CalphaResidue& r : c.residues) chains.back().push_back(r.x);
    beads += static_cast<int>(c.residues.size());
  }
  // Every copy's beads, bonds and contacts, and the system and backend the report builds, before
  // they are allocated: about 600 bytes a bead.
  const std::string room = room_for(static_cast<double>(beads) * s.p.copies, kMaxParticles, 600, "beads");
  if (!room.empty())
    throw std::invalid_argument(
        (s.p.copies > 1 ? "--copies " + std::to_string(s.p.copies) + " of " + std::to_string(beads) + " beads"
                        : o.structure) +
        ": " + room);
  std::vector<SopBridge> bridges;
  for (const CalphaBridge& b : s.structure.disulfides)
    bridges.push_back({first_bead[b.a.chain] + b.a.residue, first_bead[b.b.chain] + b.b.residue});
  s.model = build_sop_model(chains, names, s.p, bridges);
  pull_beads(o.pull, s.model, s.p);
  if (!o.overwrite)
    for (const std::string& f : {o.out, s.files.start, s.files.backbone, s.files.native})
      if (exists(f))
        throw std::invalid_argument("'" + f +
                                    "' exists (an earlier sop-build?); nothing was written. --overwrite "
                                    "replaces it, or choose another -o");
}

// One line on what was built: "SOP model of X: chains A (99), B (99); 198 beads".
std::string summary(const SopBuildOptions& o, const SopPlan& s) {
  int residues = 0;
  std::string chains;
  for (const CalphaChain& c : s.structure.chains) {
    residues += static_cast<int>(c.residues.size());
    chains += (chains.empty() ? "" : ", ") + (c.name.empty() ? std::string("' '") : c.name) + " (" +
              std::to_string(c.residues.size()) + ")";
  }
  std::ostringstream what;
  what << "SOP model of " << o.structure << ": chains " << chains << "; " << residues << " beads";
  if (s.p.copies > 1) what << " x " << s.p.copies << " copies = " << s.model.x.size() << " beads in a periodic box";
  return what.str();
}

// "chain D CYS 10 - chain D CYS 81 (5.63 A)" for each disulfide bridge.
std::vector<std::string> bridge_lines(const SopPlan& s) {
  std::vector<std::string> lines;
  for (const CalphaBridge& b : s.structure.disulfides) {
    std::ostringstream l;
    l << bridge_name(s.structure, b) << " (" << std::setprecision(3) << b.distance << " A)";
    lines.push_back(l.str());
  }
  return lines;
}

// The config's head comment: what it is, how it was made, how to run it, the bridges, the notes.
std::vector<std::string> header_lines(const SopBuildOptions& o, const SopPlan& s) {
  std::ostringstream lists;
  lists << covalent_bonds_text(s.model) << ", " << s.model.native.size()
        << " native contacts (C-alpha atoms closer than " << s.p.contact_cutoff << " A, |i - j| > "
        << s.p.min_separation - 1 << " or in different chains, not bonded).";
  std::vector<std::string> h = {"Written by pairmd sop-build " + o.structure + " (docs/proteins.md).",
                                summary(o, s) + ",", lists.str(), "Run with: pairmd run " + o.out};
  for (const std::string& b : bridge_lines(s)) h.push_back("disulfide bridge, a covalent bond: " + b);
  for (const std::string& n : s.structure.notes) h.push_back("note: " + n);
  return h;
}

// Loads what was written as `run` will, and shows the native state's energy by term.
void report(const SopBuildOptions& o, const SopPlan& s) {
  const RunConfig cfg = load_config(o.out);
  const BuiltSystem sys = build_system(cfg);
  CpuBackend cpu(make_model(cfg, sys), sys.state);
  const Observables obs = cpu.observables();
  std::cout << summary(o, s) << "\n"
            << "  " << covalent_bonds_text(s.model) << ": " << s.files.backbone << "; " << s.model.native.size()
            << " native contacts: " << s.files.native << "; start " << s.files.start << "\n";
  const std::vector<std::string> bridges = bridge_lines(s);
  const size_t shown = std::min<size_t>(bridges.size(), 10);
  for (size_t k = 0; k < shown; ++k) std::cout << "  disulfide bridge: " << bridges[k] << "\n";
  if (shown < bridges.size())
    std::cout << "  ... and " << bridges.size() - shown << " more disulfide bridges (the head comment of " << o.out
              << " lists them all)\n";
  std::cout << std::setprecision(6) << "  native state: energy " << obs.potential << " kcal/mol (repulsion "
            << obs.potential_by_term[0] << ", covalent " << obs.potential_by_term[1] << ", native contacts "
            << obs.potential_by_term[2] << " = -eps_h x " << s.model.native.size() << ")\n";
  if (s.p.pulled >= 0)
    std::cout << "  pulling: bead " << s.p.pulled << " (" << s.p.pull_mode << "), bead " << s.p.tethered
              << " tethered\n";
  std::cout << "wrote " << o.out << "; run it with: pairmd run " << o.out << "\n";
}

}  // namespace

int cmd_sop_build(const Args& args) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  SopBuildOptions o;
  if (const int rc = read_options(args, o); rc != kParsed) return rc;
  SopPlan s;
  try {
    plan(o, s);
  } catch (const StructureError& e) {
    std::cerr << "pairmd sop-build: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    std::cerr << "pairmd sop-build: " << e.what() << "\n";
    return kExitUsage;
  }
  for (const std::string& n : s.structure.notes) std::cout << "note: " << n << "\n";
  try {
    const std::string title = "SOP model of " + o.structure.substr(o.structure.find_last_of('/') + 1);
    write_sop_system(s.model, s.p, o.out, title, header_lines(o, s), o.structure);
  } catch (const std::exception& e) {
    std::cerr << "pairmd sop-build: error: " << e.what() << "\n";
    for (const std::string& f : {o.out, s.files.start, s.files.backbone, s.files.native}) std::remove(f.c_str());
    return kExitFailure;
  }
  try {
    report(o, s);
  } catch (const std::exception& e) {
    std::cerr << "pairmd sop-build: error: the written config does not load: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace pairmd::cli
