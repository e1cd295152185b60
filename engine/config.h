// Run configuration: the YAML schema of docs/config.md, parsed and validated in one place.
// Every error names file:line:column, the key and what was expected (ConfigError).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/model.h"
#include "base/system_state.h"
#include "base/vec3.h"
#include "engine/map_settings.h"

namespace pairmd {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The most particles a system may have. Indices are int throughout (bonds, lists, kernels), and
// 2^30 keeps 3N and 4N in range too; it is far beyond what one GPU or node holds (~80 B of state
// per particle, kilobytes with the lists).
constexpr int64_t kMaxParticles = int64_t(1) << 30;

// The choices of `backend` (auto: cuda where a GPU is usable, else cpu) and of `units`.
inline std::vector<std::string> backend_names() { return {"auto", "cpu", "cuda"}; }
inline std::vector<std::string> unit_system_names() { return {"lj", "real"}; }

enum class LatticeKind { Fcc, Sc };

struct LatticeSpec {
  LatticeKind kind = LatticeKind::Fcc;
  int cells[3] = {10, 10, 10};
  double density = 0.8442;
  int type = 0;
};

struct ChainsSpec {
  int count = 0;
  int length = 0;
  double density = 0.85;  // monomers (and counterions) per volume
  int bond_type = 0;
  int angle_type = -1;     // -1: no angles along the chains; else an index of force_field.angles
  int dihedral_type = -1;  // -1: no dihedrals; else an index of force_field.dihedrals
  double bond_length = 0.97;
  int monomer_type = 0;
  int charged_every = 0;      // 0: monomers carry their type's charge; k > 0: only every k-th does
  int counterion_type = -1;   // -1: no counterions; else one per monomer charge, neutralising
  double min_distance = 0.8;  // closest approach of non-bonded beads when growing the walks
  uint64_t seed = 1;
};

struct FileSpec {
  std::string path;
  int64_t frame = -1;               // -1: last frame
  std::string format = "auto";      // auto (by extension) | h5md | gsd | lammps | xyz
  std::string atom_style = "auto";  // LAMMPS data files: auto | atomic | bond | angle | molecular | charge | full
  Vec3d box{0, 0, 0};               // XYZ files without a Lattice: the box edges (0: none)
};

struct TypeSpec {
  std::string name;
  double mass = 1.0;
  double charge = 0.0;
};

enum class SystemSource { Lattice, Chains, File };

// system.add_particles: extra particles (e.g. ions from `pairmd place-ions`), appended after the
// system is built and minimised, with their type's mass and charge.
struct AddedParticle {
  int type = 0;
  Vec3d position{0, 0, 0};
};

struct SystemSpec {
  SystemSource source = SystemSource::Lattice;
  std::vector<TypeSpec> types;
  bool periodic = true;
  LatticeSpec lattice;
  ChainsSpec chains;
  FileSpec file;
  std::vector<AddedParticle> add_particles;
  double velocity_temperature = -1;     // < 0: the integrator's temperature
  uint64_t velocity_seed = 0;           // 0: the integrator's seed
  bool draw_missing_velocities = true;  // a start file without velocities: draw them (false: zero)
};

enum class MinimizeAlgorithm { None, Fire, SteepestDescent };

// `minimize` (or its alias system.relax): the energy minimisation between building the system
// and the dynamics (engine/minimize.h). Stopping rules set to 0 are off.
struct MinimizeSpec {
  MinimizeAlgorithm algorithm = MinimizeAlgorithm::None;  // None: no minimisation
  double ftol = 0.1;                                      // stop when max_i |F_i| < ftol (force units)
  double etol = 0.0;                                      // stop when |E_k - E_k-1| < etol (|E_k| + |E_k-1|) / 2
  int64_t max_iterations = 10000;
  int64_t max_evaluations = 100000;  // force evaluations
  double max_move = 0.1;             // largest displacement of a particle in one iteration
  // FIRE (Bitzek et al. 2006; FIRE 2.0, Guenole et al. 2020, as LAMMPS min_style fire):
  double dt = 0.0;     // initial time step (0: integrator.dt)
  double dtmax = 0.0;  // largest time step (0: 10 dt)
  double dtmin = 0.0;  // smallest time step (0: dt / 50)
  int64_t delay = 20;  // P > 0 iterations before dt grows and alpha shrinks (N_delay)
  double dt_grow = 1.1, dt_shrink = 0.5, alpha0 = 0.1, alpha_shrink = 0.99;
  // Given as system.relax {steps, max_move}: the old capped steepest descent, said so in the log.
  bool from_relax = false;
};

struct TrajectorySpec {
  int64_t every = 0;              // 0: no trajectory
  int64_t velocities_every = 0;   // 0: not written
  int64_t forces_every = 0;       // 0: not written
  int64_t observables_every = 0;  // 0: same as thermo
  int compression = 0;            // gzip level 0..9
  double flush_seconds = 10.0;    // flush at least this often (frames survive a SIGKILL)
};

// output.gsd: a GSD (HOOMD) trajectory next to (or instead of) the H5MD one.
struct GsdSpec {
  int64_t every = 0;            // 0: no GSD file
  bool velocities = false;      // velocities in every frame
  double flush_seconds = 10.0;  // as output.trajectory.flush_seconds
};

// analysis.potential_map: a map every `every` steps of the run (0: none), with these settings.
struct PotentialMapSpec {
  int64_t every = 0;
  MapSettings settings;
};

struct OutputSpec {
  std::string prefix;  // file stem; default: the config's name next to the config
  int64_t thermo_every = 100;
  std::string progress = "auto";  // auto | on | off
  TrajectorySpec trajectory;
  GsdSpec gsd;
  int64_t checkpoint_every = 0;  // 0: only at the end
};

// replicas: K copies of the system, one per MPI rank (docs/replicas.md). Independent replicas
// differ by seed; temperature replica exchange gives replica r temperature r of the ladder and
// swaps neighbouring temperatures every exchange_every steps.
struct ReplicaSpec {
  int count = 0;                     // K; 0: no replicas section (one run, as ever)
  bool exchange = false;             // mode: exchange (true) or independent
  std::vector<double> temperatures;  // the ladder, increasing (exchange); empty for independent
  bool geometric = false;            // the ladder came from min_temperature .. max_temperature
  int64_t exchange_every = 1000;     // M: steps between exchanges (independent: between checks)
  uint64_t seed = 0;                 // key of the exchange draws (0: the integrator's seed)
};

// Where the pairs of a pair list came from, for messages: the file (or the config) and the line
// of each pair.
struct PairListSource {
  std::string file;
  std::vector<int> lines;
};

// `pulling` as the config gives it. The points it leaves out are taken from the system the
// config builds (engine/pulling.h), which gives the run's PullSettings.
struct PullSpec {
  PullMode mode = PullMode::None;
  int64_t pulled = -1, tethered = -1;
  double spring = 0, speed = 0, force = 0, tether_spring = 0;
  bool has_anchor = false, has_direction = false, has_tether_position = false;
  Vec3d anchor{0, 0, 0}, direction{0, 0, 0}, tether_position{0, 0, 0};
  int64_t start_step = 0;
  int64_t every = 0;  // rows of PREFIX.pull.csv (and the trajectory's pull observables); 0: thermo_every
};

struct RunConfig {
  std::string path;  // config file as given
  std::string text;  // its verbatim text (stored in the trajectory)
  std::string title;
  std::string backend = "auto";
  int64_t steps = 0;
  Model model;
  SystemSpec system;
  MinimizeSpec minimize;
  OutputSpec output;
  PotentialMapSpec potential_map;
  ReplicaSpec replicas;
  PullSpec pulling;
  std::vector<PairListSource> pair_list_sources;  // per force_field.pair_lists item
  std::vector<std::pair<std::string, std::string>>
      overrides;                            // --set key.path=value, in order (key as messages write it)
  std::vector<std::string> override_specs;  // the same as --set takes them ("force_field.pair.0.cutoff=3")
  // Identifies the files of one run across its restarts (not a config key): a new run draws one,
  // a restart into its run's files keeps the checkpoint's. Stored in the trajectory and checkpoints.
  std::string run_id;

  // "file:line:column" of keys that are checked again once the system exists (cutoffs
  // against the box, the start file), by config path.
  std::map<std::string, std::string> locations;
  std::string chains_bond_name;
  std::string chains_angle_name, chains_dihedral_name;
  // force_field.angles / dihedrals / impropers: file: the types are the LAMMPS data file's
  // (system.file), with their Coeffs (in that order).
  bool angle_types_from_file = false, dihedral_types_from_file = false, improper_types_from_file = false;
};

// The electrostatics section against the system's box (engine/config_electrostatics.cpp): an open
// box, one shorter than twice the cutoff or a grid the accuracy would need beyond the limit is a
// ConfigError. The notes: the PME parameters for the log; `warnings` gets a net charge.
void validate_electrostatics(const RunConfig& cfg, const Box& box);
std::vector<std::string> electrostatics_notes(const RunConfig& cfg, const SystemState& state,
                                              std::vector<std::string>* warnings);

// Reads and validates `path` with `--set` overrides applied ("a.b.c=value"). Throws ConfigError.
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});
// The same from text (tests); `name` stands for the file in messages.
RunConfig parse_config(const std::string& text, const std::string& name,
                       const std::vector<std::string>& overrides = {});

// An override in the form --set takes: "force_field.pair[0].cutoff=3" (as messages and older
// checkpoints write it) becomes "force_field.pair.0.cutoff=3".
std::string override_spec(const std::string& spec);
// `earlier` then `later`, without the earlier ones whose key a later one sets again (the later
// one replaces the whole node at that key, so dropping them changes nothing).
std::vector<std::string> merge_overrides(const std::vector<std::string>& earlier,
                                         const std::vector<std::string>& later);

// What differs between two configs (texts with their overrides applied), one line per key:
// "integrator.temperature: 1.2 -> 1.5". Comments and layout do not count. At most `max_lines`
// lines; a last line says how many more there are.
std::vector<std::string> config_differences(const std::string& text_a, const std::vector<std::string>& overrides_a,
                                            const std::string& text_b, const std::vector<std::string>& overrides_b,
                                            size_t max_lines = 20);

}  // namespace pairmd
