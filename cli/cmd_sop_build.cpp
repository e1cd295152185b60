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
#include <unistd.h>

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
#include "io/hdf5_util.h"
#include "io/sop_files.h"
#include "io/structure_file.h"

namespace pairmd::cli {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, sep);)
    if (!x.empty()) out.push_back(x);
  return out;
}

struct SopBuildOptions {
  std::string structure, out, chains, gaps = "error", altloc = "error", disulfides = "bonds", pull;
  double max_bond = CalphaOptions().max_bond;
  SopParameters p;  // the options bound to the parameters, in the config's units but for these:
  std::optional<double> dt_fs, friction_per_fs, pull_speed_per_fs;
  bool overwrite = false;
};

// An option bound to `value`, checked by `rule`; the last one given counts.
template <typename T>
CLI::Option* number(CLI::App& app, const char* name, T& value, const std::string& help, const NumberRule& rule) {
  return app.add_option(name, value, help)
      ->check(number_check(rule))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

CLI::Option* choice(CLI::App& app, const char* name, std::string& value, const std::string& help,
                    std::vector<std::string> names) {
  return app.add_option(name, value, help)
      ->check(choice_check([names] { return names; }))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

// The structure and how it is read: which chains, gaps, alternate locations, disulfides.
void add_structure_options(CLI::App& app, SopBuildOptions& o) {
  app.add_option("STRUCTURE", o.structure, "the structure: PDB or mmCIF, optionally gzipped")->required();
  app.add_option("-o,--out", o.out, "the config to write (OUT.yaml); the other files are named after it")
      ->check(not_empty("a file name"))
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--chains", o.chains, "the chains to take, comma-separated (default: every chain with amino acids)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  choice(app, "--gaps", o.gaps, "error (default): a chain gap stops with an error; split: the pieces become chains",
         {"error", "split"});
  choice(app, "--altloc", o.altloc,
         "error (default): alternate locations of a C-alpha stop with an error; highest: take the one of highest "
         "occupancy",
         {"error", "highest"});
  choice(app, "--disulfides", o.disulfides,
         "bonds (default): disulfide bridges (SSBOND records) are covalent bonds, as in SOP-GPU; none: left out "
         "(a reduced protein; a close pair is then a native contact)",
         {"bonds", "none"});
  number(app, "--max-bond", o.max_bond, "consecutive C-alpha atoms farther apart are a chain gap (default 4.5 A)",
         NumberRule::above(0));
}

// The model: contacts, repulsion, bonds, masses, copies.
void add_model_options(CLI::App& app, SopParameters& p) {
  const NumberRule positive = NumberRule::above(0), non_negative = NumberRule::at_least(0);
  number(app, "--contact-cutoff", p.contact_cutoff, "native contacts: C-alpha atoms closer than this (default 8 A)",
         positive);
  number(app, "--epsilon-h", p.epsilon_h, "native contact depth eps_h (default 1.5 kcal/mol)", non_negative);
  number(app, "--epsilon-l", p.epsilon_l, "repulsion eps_l (default 1 kcal/mol)", non_negative);
  number(app, "--sigma", p.sigma, "repulsion sigma (default 3.8 A)", positive);
  number(app, "--bond-k", p.bond_k, "FENE k of the covalent bonds (default 20 kcal/(mol A^2) = 13.9 N/m, SOP-GPU's)",
         positive);
  number(app, "--max-extension", p.bond_max_extension, "backbone FENE R0, the largest |r - r0| (default 2 A)",
         positive);
  number(app, "--repulsion-cutoff", p.repulsion_cutoff, "repulsion cutoff, not shifted (default 20 A, SOP-GPU's)",
         positive);
  number(app, "--mass", p.mass, "bead mass (default 110 amu)", positive);
  number(app, "--copies", p.copies,
         "copies of the protein on a cubic lattice in a periodic box (default 1: one, open boundaries)",
         NumberRule::whole_from(1, 100000000));
  number(app, "--independent", p.independent,
         "K independent runs of the protein (a replicas section, mode independent: seed + k, each with its own files "
         "and force-extension log; without mpirun they run side by side on one GPU, docs/ensembles.md)",
         NumberRule::whole_from(1, 1 << 16));
  number(app, "--copy-gap", p.copy_gap,
         "distance between the copies' bounding boxes (default: the repulsion cutoff, so they start out of reach)",
         non_negative);
}

// The run: dynamics, lengths, output.
void add_run_options(CLI::App& app, SopBuildOptions& o) {
  SopParameters& p = o.p;
  const NumberRule positive = NumberRule::above(0), non_negative = NumberRule::at_least(0);
  const double most = 1152921504606846976.0;  // 2^60
  choice(app, "--integrator", p.integrator, "brownian (overdamped, default) or langevin (underdamped)",
         {"brownian", "langevin"});
  number(app, "--temperature", p.temperature, "temperature (default 300 K)", non_negative);
  number(app, "--dt", o.dt_fs, "time step in fs (default 40 fs brownian, 20 fs langevin)", positive);
  number(app, "--friction", o.friction_per_fs, "friction gamma in 1/fs (default 0.0167/fs brownian, 0.001/fs langevin)",
         positive);
  number(app, "--skin", p.skin, "neighbour-list skin in A (default: auto, tuned at start on a GPU)", non_negative);
  number(app, "--steps", p.steps, "steps of the run (default 100000)", NumberRule::whole_from(0, most));
  number(app, "--thermo-every", p.thermo_every, "thermo output every so many steps (default 1000)",
         NumberRule::whole_from(1, most));
  number(app, "--trajectory-every", p.trajectory_every, "trajectory frames every so many steps (default 1000)",
         NumberRule::whole_from(0, most));
  number(app, "--seed", p.seed, "seed of the noise (default 1)", NumberRule::whole_from(0, most));
}

// The pulling: which beads, a ramp or a constant force, its springs, its log.
void add_pull_options(CLI::App& app, SopBuildOptions& o) {
  SopParameters& p = o.p;
  app.add_option("--pull", o.pull,
                 "pull: TETHERED,PULLED bead indices (or 'ends', also given as --pull alone: the first and last bead "
                 "of the first chain); the tethered bead is held by a spring, the pulled one by the pulling spring or "
                 "force")
      ->expected(0, 1)
      ->default_str("ends")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  choice(app, "--pull-mode", p.pull_mode,
         "ramp (default: a spring whose anchor moves at --pull-speed) or constant (--pull-force)",
         {"ramp", "constant"});
  number(app, "--pull-speed", o.pull_speed_per_fs, "anchor speed in A/fs (default 1e-5 A/fs = 1 m/s)", NumberRule{});
  number(app, "--pull-spring", p.pull_spring, "pulling spring k_s (default 0.07 kcal/(mol A^2), 0.05 N/m)",
         NumberRule::above(0));
  number(app, "--pull-force", p.pull_force, "constant force (default 1 kcal/(mol A), 69.5 pN)", NumberRule{});
  number(app, "--tether-spring", p.tether_spring, "the tether's spring (default 10 kcal/(mol A^2))",
         NumberRule::above(0));
  number(app, "--pull-every", p.pull_every, "rows of the pulling CSV every so many steps (default 100)",
         NumberRule::whole_from(1, 1152921504606846976.0));
}

// The model's parameters: the options bound to them, the time step, friction and pulling speed
// in the config's ps (the options take fs).
SopParameters parameters(const SopBuildOptions& o) {
  SopParameters p = o.p;
  if (p.independent > 1 && p.copies > 1)
    throw std::invalid_argument("--independent: runs of one protein each; --copies puts copies in one box (not both)");
  if (o.dt_fs) p.dt_ps = 1e-3 * *o.dt_fs;
  if (o.friction_per_fs) p.friction_per_ps = 1e3 * *o.friction_per_fs;
  if (o.pull_speed_per_fs) p.pull_speed = 1e3 * *o.pull_speed_per_fs;
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
    const NumberRule bead = NumberRule::whole_from(0, m.beads_per_copy - 1);
    double bead_index[2];
    for (int k = 0; k < 2; ++k) {
      const std::string why = bead.parse(v[k], bead_index[k]);
      if (!why.empty()) throw std::invalid_argument("--pull: " + why);
    }
    p.tethered = static_cast<long>(bead_index[0]);
    p.pulled = static_cast<long>(bead_index[1]);
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
  co.max_bond = o.max_bond;
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

int sop_build(const SopBuildOptions& o) {
  h5::quiet_library(false);
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

}  // namespace

Command add_sop_build(CLI::App& app) {
  CLI::App* sub = add_command(
      app, "sop-build",
      "the Self-Organized Polymer model of the proteins of a PDB or mmCIF file, as a config that `run` runs as it is "
      "(docs/proteins.md)",
      std::string(
          "Build the Self-Organized Polymer (SOP) model of the proteins of a PDB or mmCIF file: one bead per residue "
          "at "
          "its C-alpha, FENE bonds about the native distances, native contacts (12-6, minimum at each native "
          "distance), "
          "soft repulsion between all other pairs. Writes OUT.yaml, which `pairmd run` runs as it is, and beside it "
          "OUT.start.h5 (the beads) and OUT.backbone.pairs, OUT.native.pairs (the pair lists). The config's units are "
          "LAMMPS real: lengths in A, energies in kcal/mol, times in fs, temperatures in K, and so are the options "
          "(docs/proteins.md).") +
          "\n" + "exit codes: 0 written, 2 bad input (nothing written), 1 a file could not be written");
  auto o = std::make_shared<SopBuildOptions>();
  add_structure_options(*sub, *o);
  add_model_options(*sub, o->p);
  add_run_options(*sub, *o);
  add_pull_options(*sub, *o);
  sub->add_flag("--overwrite", o->overwrite, "replace files of an earlier sop-build with the same OUT");
  return [o](const Args&) { return sop_build(*o); };
}

}  // namespace pairmd::cli
