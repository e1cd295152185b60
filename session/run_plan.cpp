#include "session/run_plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <random>
#include <sstream>

#include "backends/strategies.h"
#include "base/version.h"
#include "engine/pulling.h"
#include "engine/time_step_check.h"
#include "io/checkpoint_run.h"
#include "io/csv_rows.h"
#include "session/run_setup.h"

namespace pairmd {

namespace {

RunConfig load_request_config(const RunRequest& r, const std::vector<std::string>& sets) {
  return r.config_is_text ? parse_config(r.config_text, r.config_name, sets) : load_config(r.config_path, sets);
}

// A config given as text has no file name to name the outputs after.
void require_prefix(const RunRequest& r, const FrontEnd& fe, const RunConfig& cfg) {
  if (!r.config_is_text || !cfg.output.prefix.empty() || !r.output.empty()) return;
  throw ConfigError(r.config_name +
                    ": output.prefix: a config given as text has no file name to name its outputs "
                    "after: set output.prefix, or give " +
                    fe.output_example);
}

// The restart's config must describe the checkpoint's system: same particle count, types and
// bonds. The config's own system is built only to compare (no relaxation), and only where that
// reads no file: a checkpoint is the whole start of its restart, the start file of system.file
// may be gone (then the count, per-particle types and bonds cannot be compared; the names and
// the box still are).
void check_same_system(const RunConfig& cfg, const Checkpoint& ck, const std::string& ck_path) {
  const SystemState& b = ck.state;
  auto fail = [&](const std::string& what) {
    throw ConfigError(cfg.path + ": does not describe the system of checkpoint '" + ck_path + "': " + what);
  };
  if (cfg.system.types.size() != b.type_names.size()) fail("different number of particle types");
  for (size_t t = 0; t < b.type_names.size(); ++t)
    if (cfg.system.types[t].name != b.type_names[t])
      fail("particle type " + std::to_string(t) + " is '" + b.type_names[t] + "' in the checkpoint, '" +
           cfg.system.types[t].name + "' in the config");
  for (const Bond& bond : ck.topology.bonds)
    if (bond.type >= static_cast<int>(cfg.model.force_field.bond_types.size()))
      fail("its bonds use bond type " + std::to_string(bond.type) + ", which force_field.bonds does not define");
  const ForceField& ff = cfg.model.force_field;
  auto check_types = [&](const auto& terms, size_t ntypes, const char* what) {
    for (const auto& t : terms)
      if (t.type < 0 || static_cast<size_t>(t.type) >= ntypes)
        fail(std::string("its ") + what + " use type " + std::to_string(t.type) + ", which force_field." + what +
             " does not define");
  };
  check_types(ck.topology.angles, ff.angle_types.size(), "angles");
  check_types(ck.topology.dihedrals, ff.dihedral_types.size(), "dihedrals");
  check_types(ck.topology.impropers, ff.improper_types.size(), "impropers");
  if (cfg.system.periodic != b.box.periodic) fail("different boundary");
  validate_against_box(cfg, b.box);
  validate_pair_lists(cfg, b.size());
  if (cfg.system.source == SystemSource::File) return;
  RunConfig probe = cfg;
  probe.minimize.algorithm = MinimizeAlgorithm::None;
  const BuiltSystem sys = build_system(probe);
  const SystemState& a = sys.state;
  if (a.size() != b.size())
    fail("the config builds " + std::to_string(a.size()) + " particles, the checkpoint holds " +
         std::to_string(b.size()));
  for (size_t i = 0; i < a.size(); ++i)
    if (a.type[i] != b.type[i]) fail("particle " + std::to_string(i) + " has another type");
  if (sys.topology.bonds.size() != ck.topology.bonds.size())
    fail("the config has " + std::to_string(sys.topology.bonds.size()) + " bonds, the checkpoint " +
         std::to_string(ck.topology.bonds.size()));
  const Topology &mine = sys.topology, &theirs = ck.topology;
  if (mine.angles.size() != theirs.angles.size() || mine.dihedrals.size() != theirs.dihedrals.size() ||
      mine.impropers.size() != theirs.impropers.size())
    fail("the config has " + std::to_string(mine.angles.size()) + " angles, " + std::to_string(mine.dihedrals.size()) +
         " dihedrals and " + std::to_string(mine.impropers.size()) + " impropers, the checkpoint " +
         std::to_string(theirs.angles.size()) + ", " + std::to_string(theirs.dihedrals.size()) + " and " +
         std::to_string(theirs.impropers.size()));
}

// The pulling of a restart. Its anchor, tether point and direction, where the config leaves them
// out, are those of the run's start: stored in the checkpoint (exactly as resolved then), or, in
// a checkpoint older than that, found by building the config's system again.
PullSettings restart_pulling(const RunConfig& cfg, const Checkpoint& ck) {
  if (!pulling_needs_start(cfg)) return resolve_pulling(cfg, ck.state);
  const PullSpec& spec = cfg.pulling;
  const PullSettings& at_start = ck.pulling;
  if (!at_start.active() || at_start.pulled != spec.pulled || at_start.tethered != spec.tethered)
    return build_system(cfg).pulling;
  RunConfig given = cfg;
  PullSpec& g = given.pulling;
  g.has_anchor = g.has_direction = g.has_tether_position = true;
  g.anchor = spec.has_anchor ? spec.anchor : at_start.anchor;
  g.direction = spec.has_direction ? spec.direction : at_start.direction;
  g.tether_position = spec.has_tether_position ? spec.tether_position : at_start.tether;
  PullSettings s = resolve_pulling(given, ck.state);
  // Bit for bit as at the start (resolve_pulling would normalise the stored unit vector again).
  if (!spec.has_direction) s.direction = at_start.direction;
  return s;
}

}  // namespace

// std::random_device, with the time and process id mixed in where it is weak.
std::string new_run_id() {
  std::random_device rd;
  uint64_t x = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()) ^
               (uint64_t(getpid()) << 17);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

namespace {

// Replica ensembles run with the pairmd program (threads or MPI ranks), which sets the replica
// hooks; from Python, pairmd.Ensemble runs copies without files.
void refuse_ensemble(const RunRequest& r, const FrontEnd& fe, const RunPlan& p) {
  if (r.replica_setup) return;
  if (p.cfg.replicas.count > 0) {
    auto it = p.cfg.locations.find("replicas.count");
    throw ConfigError((it != p.cfg.locations.end() ? it->second : p.cfg.path) + ": replicas: " + fe.who +
                      " runs one simulation; a replica ensemble runs with the pairmd program (pairmd run CONFIG on one "
                      "GPU, or mpirun -np K pairmd run CONFIG over several; docs/replicas.md), or from Python as "
                      "pairmd.Ensemble (K copies, no files; docs/ensembles.md)");
  }
  if (p.restart && !p.ck.ensemble.empty())
    throw ConfigError(fe.who + ": " + fe.restart + ": '" + r.restart +
                      "' is the checkpoint of a replica of an ensemble; restart the whole ensemble with the pairmd "
                      "program (pairmd run --restart PREFIX.r{replica}.checkpoint.h5, under mpirun -np K if it ran so; "
                      "docs/replicas.md)");
}

std::string base_name(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The run id of the checkpoint at `path` ("" when there is none, or it cannot be read).
std::string checkpoint_run_id(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0) return "";
  try {
    return read_checkpoint(path).run_id;
  } catch (const std::runtime_error&) {
    return "";
  }
}

// Whether `prefix` holds the files of the run that wrote checkpoint `ck` (read from `restart`):
// its checkpoint is that file, or one of the same run.
bool holds_run_of(const std::string& prefix, const Checkpoint& ck, const std::string& restart) {
  const std::string theirs = prefix + ".checkpoint.h5";
  if (same_file(theirs, restart)) return true;
  return !ck.run_id.empty() && checkpoint_run_id(theirs) == ck.run_id;
}

// Where the files of the checkpoint's run are. The checkpoint stores the prefix as its run gave
// it (relative to where that run ran). Where that prefix holds none of the run's files (they were
// moved, or the restart runs in another directory) and the checkpoint is PREFIX.checkpoint.h5 of a
// prefix with the stored name, the run's files are the ones beside it.
std::string run_prefix(const RunRequest& r, const Checkpoint& ck) {
  const std::string stored = ck.prefix, suffix = ".checkpoint.h5";
  if (stored.empty() || !ck.ensemble.empty()) return stored;  // an ensemble's prefixes stay together
  const std::string& at = r.restart;
  if (at.size() <= suffix.size() || at.compare(at.size() - suffix.size(), suffix.size(), suffix) != 0) return stored;
  const std::string beside = at.substr(0, at.size() - suffix.size());
  if (same_prefix(beside, stored) || base_name(beside) != base_name(stored)) return stored;
  const std::string other = checkpoint_run_id(stored + suffix);
  const bool stored_is_theirs = !ck.run_id.empty() && !other.empty() && other != ck.run_id;
  if (!OutputFiles{stored}.existing().empty() && !stored_is_theirs) return stored;
  return beside;
}

}  // namespace

void load_plan(const RunRequest& r, const FrontEnd& fe, RunPlan& p) {
  const std::vector<std::string>& sets = r.overrides;
  auto mine = [&r](const std::string& prefix) { return r.replica_prefix ? r.replica_prefix(prefix) : prefix; };
  if (r.restart.empty()) {
    p.cfg = load_request_config(r, sets);
    refuse_ensemble(r, fe, p);
    if (r.replica_setup) r.replica_setup(p);
    if (!r.no_files) require_prefix(r, fe, p.cfg);
    p.files.prefix = mine(r.output.empty() ? output_prefix(p.cfg) : r.output);
    p.cfg.output.prefix = p.files.prefix;
    p.cfg.run_id = new_run_id();
    return;
  }
  p.restart = true;
  try {
    p.ck = read_checkpoint(r.restart);
  } catch (const std::runtime_error& e) {
    throw ConfigError(fe.who + ": " + fe.restart + ": " + e.what());
  }
  const std::vector<std::string> all = merge_overrides(p.ck.overrides, sets);
  const bool own_config = r.config_is_text || !r.config_path.empty();
  p.cfg = own_config ? load_request_config(r, all) : parse_config(p.ck.config_text, p.ck.config_path, all);
  check_checkpoint_units(p.ck, p.cfg, r.restart);
  refuse_ensemble(r, fe, p);
  if (r.replica_setup) r.replica_setup(p);
  // A replica's prefixes are its own (BASE.r03); the messages name the base a user would give.
  const std::string derived_base = output_prefix(p.cfg);
  const std::string derived = mine(derived_base);
  const std::string output = r.output.empty() ? "" : mine(r.output);
  const std::string found = run_prefix(r, p.ck);
  p.files.prefix = !output.empty() ? output : !found.empty() ? found : derived;
  // Checkpoints written before the prefix was stored continue whatever prefix the run has; a
  // prefix given with --output that holds the run's own files (moved there) continues them.
  p.continues_files = !r.no_files && (p.ck.prefix.empty() || same_prefix(p.files.prefix, found) ||
                                      holds_run_of(p.files.prefix, p.ck, r.restart));
  p.first = p.ck.state.step;
  // `steps` is the length of the whole run from its original start, so a restart finishes the
  // run it continues (and --steps N / --set steps=N sets that total).
  p.last = p.ck.first_step + p.cfg.steps;

  const std::vector<std::string> diff = config_differences(p.ck.config_text, p.ck.overrides, p.cfg.text, all);
  if (diff.empty()) {
    p.notes.push_back("restart: same config and " + fe.set + " overrides as the run that wrote " + r.restart);
  } else {
    std::string d = "restart: differs from the run that wrote " + r.restart + ":";
    for (const std::string& line : diff) d += "\n  " + line;
    p.notes.push_back(d);
  }
  if (output.empty() && !same_prefix(found, p.ck.prefix))
    p.notes.push_back("restart: the run wrote its files at " + p.ck.prefix +
                      ".* (relative to where it ran), which holds "
                      "none of them here; it continues them beside its checkpoint: " +
                      found + ".*");
  if (r.no_files)
    p.notes.push_back("restart: no output files (the run of the checkpoint wrote " + p.ck.prefix + ".*)");
  else if (!p.continues_files)
    p.notes.push_back("restart: output prefix " + found + " -> " + p.files.prefix + " (" + fe.output +
                      "): new files, starting at step " + std::to_string(p.first));
  else if (r.output.empty() && !found.empty() && !same_prefix(derived, found))
    p.notes.push_back("restart: continues the files " + found + ".* of its run (output.prefix " + derived +
                      " is not used; " + fe.output + " " + derived_base + " would start new files there)");
  p.cfg.output.prefix = p.files.prefix;
  // The run keeps its id in its own files; new files are a new run's.
  p.cfg.run_id = p.continues_files && !p.ck.run_id.empty() ? p.ck.run_id : new_run_id();
}

namespace {

// What the run writes into `path`, one of its files, for messages.
std::string what_goes_into(const OutputFiles& f, const std::string& path) {
  const std::pair<std::string, const char*> kinds[] = {
      {f.trajectory(), "its trajectory"},       {f.gsd(), "its GSD trajectory"},
      {f.thermo(), "its thermo table"},         {f.checkpoint(), "its checkpoint"},
      {f.potential_map(), "its potential map"}, {f.log(), "its log"},
      {f.pull(), "its pulling record"},         {f.pull_plot(), "its force-extension plot"}};
  for (const auto& [name, what] : kinds)
    if (name == path) return what;
  return "its output";
}

// The files the run reads, with what each is: its config, its start file, its pair lists and,
// unless it continues its own files, the checkpoint it starts from.
std::vector<std::pair<std::string, std::string>> run_inputs(const RunRequest& r, const RunPlan& p) {
  std::vector<std::pair<std::string, std::string>> in;
  if (!r.config_is_text && !r.config_path.empty()) in.push_back({r.config_path, "the config"});
  if (p.cfg.system.source == SystemSource::File) in.push_back({p.cfg.system.file.path, "the start file (system.file)"});
  for (const PairListSource& s : p.cfg.pair_list_sources)
    in.push_back({s.file, "a pair list file (force_field.pair_lists)"});
  if (p.restart && !p.continues_files) in.push_back({r.restart, "the checkpoint it starts from"});
  return in;
}

// A file of the run's set that no option makes it replace: not a regular file, one of the run's
// inputs, a file of another run, or this command's standard output or error (other than an empty
// log: see earlier_run_files). Returns why, or "".
std::string irreplaceable(const RunRequest& r, const FrontEnd& fe, const RunPlan& p, const std::string& f) {
  const std::string what = what_goes_into(p.files, f);
  struct stat st;
  if (stat(f.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return "'" + f + "' is " + (S_ISDIR(st.st_mode) ? "a directory" : "not a regular file") +
           ", not a file of an earlier run; the run writes " + what +
           " there: rename or remove it, or choose another "
           "prefix with " +
           fe.output_example;
  for (const auto& [in, which] : run_inputs(r, p))
    if (same_file(f, in))
      return "'" + f + "' is " + which + " of this run; the run would write " + what +
             " there: choose another "
             "prefix with " +
             fe.output_example;
  const std::string owner = owning_run(f);
  if (!owner.empty() && !same_prefix(owner, p.files.prefix))
    return "'" + f + "' is a file of the pairmd run with prefix '" + owner + "'; the run would write " + what +
           " there: choose another prefix with " + fe.output_example;
  if (standard_streams_at(f) != 0 && f != p.files.log())
    return "'" + f + "' is this command's " + (standard_streams_at(f) & 1 ? "standard output" : "standard error") +
           " (a shell redirect); the run writes " + what + " there: redirect to " + p.files.log() +
           " (the run's log) or another name";
  return "";
}

// The files of an earlier run the prefix refuses or, with --overwrite, removes. A restart that
// continues its files, and every file no option replaces, are checked by the caller.
std::string list_of(const std::vector<std::string>& files) {
  std::string list;
  for (const std::string& f : files) list += (list.empty() ? "" : ", ") + f;
  return list;
}

// A restart that continues its run's files: the prefix must still hold that run's files.
void check_continued_files(const RunRequest& r, const FrontEnd& fe, const RunPlan& p) {
  if (r.overwrite)
    throw ConfigError(fe.who + ": " + fe.overwrite + ": a restart continues the files of its run (" + p.files.prefix +
                      ".*) and replaces nothing; to start new files from the checkpoint, give " + fe.output +
                      " NEW_PREFIX");
  // The prefix may have been taken over by another run since this checkpoint was written (a
  // copy of it, restarted after the prefix was reused with --overwrite): that run's newest
  // checkpoint says whose files these are. (A damaged checkpoint says nothing; the trajectory's
  // own run id is checked when it opens.)
  const std::string theirs = p.files.checkpoint();
  if (p.ck.run_id.empty() || same_file(theirs, r.restart)) return;
  const std::string other = checkpoint_run_id(theirs);
  if (!other.empty() && other != p.ck.run_id)
    throw ConfigError(fe.who + ": the files " + p.files.prefix + ".* belong to another run than " + r.restart +
                      " (run ids " + other + " and " + p.ck.run_id + "); nothing was written. To go on from " +
                      r.restart + ", start new files with " + fe.output + " NEW_PREFIX");
}

// How to go on when the prefix holds files of an earlier run. --overwrite is offered only for
// files that are not those of the run a restart continues: a restart offers it only where the
// prefix's checkpoint shows another run.
std::string ways_on(const FrontEnd& fe, const RunPlan& p, const std::vector<std::string>& there) {
  std::string how;
  const bool has_checkpoint = std::find(there.begin(), there.end(), p.files.checkpoint()) != there.end();
  if (!p.restart && fe.continue_with && has_checkpoint)
    how += "\n  to continue that run:  " + fe.continue_with(p.files.checkpoint());
  const std::string other = p.restart ? checkpoint_run_id(p.files.checkpoint()) : "";
  if (!p.restart || (!other.empty() && other != p.ck.run_id))
    how += "\n  to replace its files:  add " + fe.overwrite;
  else
    how +=
        "\n  (they may be files of the run being continued, moved without its checkpoint: pairmd does not "
        "offer to replace them)";
  return how + "\n  to keep them:          choose another prefix with " + fe.output_example;
}

}  // namespace

std::vector<std::string> earlier_run_files(const OutputFiles& files) {
  std::vector<std::string> there;
  for (const std::string& f : files.existing()) {
    // The shell creates `> P.log` before pairmd starts: an empty log that is this command's own
    // standard output or error is the log being written now (session/run_log.h), not a file of an
    // earlier run.
    struct stat st;
    if (f == files.log() && standard_streams_at(f) != 0 && stat(f.c_str(), &st) == 0 && st.st_size == 0) continue;
    there.push_back(f);
  }
  return there;
}

void check_existing_outputs(const RunRequest& r, const FrontEnd& fe, const RunPlan& p) {
  if (r.no_files) return;
  for (const std::string& f : p.files.existing()) {
    const std::string why = irreplaceable(r, fe, p, f);
    if (!why.empty()) throw ConfigError(fe.who + ": " + why + "; nothing was written");
  }
  if (p.continues_files) return check_continued_files(r, fe, p);
  const std::vector<std::string> there = earlier_run_files(p.files);
  if (there.empty()) return;
  if (r.overwrite) {
    if (standard_streams_at(p.files.log()) != 0 && std::find(there.begin(), there.end(), p.files.log()) != there.end())
      throw ConfigError(fe.who + ": " + fe.overwrite + ": '" + p.files.log() + "' holds an earlier run's log and is " +
                        "this command's output (a shell redirect): removing it would lose what the run prints; "
                        "redirect to another file, or remove it first; nothing was written");
    return;
  }
  throw ConfigError(fe.who + ": the output prefix '" + p.files.prefix + "' holds files of an earlier run (" +
                    list_of(there) + "); nothing was written" + ways_on(fe, p, there));
}

int64_t truncate_thermo_csv(const std::string& path, int64_t step) {
  return drop_csv_rows(path, [step](const std::string& row) {
    char* end = nullptr;
    const long long s = std::strtoll(row.c_str(), &end, 10);
    if (end != row.c_str() && s < step) return RowFate::Keep;
    return s > step ? RowFate::Drop : RowFate::DropUncounted;  // the restart step's row is written again
  });
}

void build_start(const RunRequest& r, RunPlan& p) {
  if (!p.restart) {
    p.sys = build_system(p.cfg);
    p.first = p.sys.state.step;
    p.last = p.first + p.cfg.steps;
    return;
  }
  check_same_system(p.cfg, p.ck, r.restart);
  p.sys.state = p.ck.state;
  p.sys.topology = p.ck.topology;
  p.sys.pulling = restart_pulling(p.cfg, p.ck);
}

void prepare_run(const RunRequest& r, const FrontEnd& fe, PreparedRun& run, std::ostream& err) {
  RunPlan& p = run.plan;
  load_plan(r, fe, p);
  check_storable_names(p.cfg);
  if (!r.no_files) {
    try {
      run.claim = std::make_unique<OutputClaim>(p.files.prefix);
    } catch (const OutputInUse& e) {
      throw ConfigError(fe.who + ": " + e.what() + "; nothing was written");
    }
    if (!run.claim->warning().empty()) err << fe.who << ": warning: " << run.claim->warning() << "\n";
  }
  check_existing_outputs(r, fe, p);
  const std::string kind = planned_backend(p.cfg);
  check_build_memory(p.cfg, kind);
  build_start(r, p);
  run.need = check_run_memory(p.cfg, kind, p.sys);
  const Model model = make_model(p.cfg, p.sys);
  try {
    if (r.backend_hook) run.backend = r.backend_hook(p, model, &run.why);
    if (!run.backend) run.backend = make_backend(p.cfg.backend, model, p.sys.state, &run.why);
  } catch (const std::exception& e) {
    throw ConfigError(fe.who + ": " + e.what());
  }
  check_start_forces(p.cfg, p.sys.state, run.backend->forces());
}

bool describe_start(const RunRequest& r, const FrontEnd& fe, const PreparedRun& run, std::ostream& out,
                    std::ostream& err) {
  const RunPlan& p = run.plan;
  const RunConfig& cfg = p.cfg;
  const std::string backend = run.backend->name();
  out << "pairmd " << PAIRMD_VERSION << ": " << (cfg.title.empty() ? cfg.path : cfg.title) << "\n"
      << describe_system(cfg, p.sys) << "backend: " << run.why << "\n"
      << describe_memory(run.need, built_size(p.sys.state, static_cast<int64_t>(p.sys.topology.bonds.size()))) << "\n";
  if (p.restart) {
    const Checkpoint& ck = p.ck;
    for (const std::string& note : p.notes) out << note << "\n";
    out << "restart: from checkpoint '" << r.restart << "' at step " << p.first << "; the run started at step "
        << ck.first_step << " and `steps` (" << cfg.steps << ") counts from there, so it ends at step " << p.last
        << "\n";
    if (ck.seed != cfg.model.integrator.seed || ck.dt != cfg.model.integrator.dt ||
        ck.integrator != integrator_kind_name(cfg.model.integrator.kind) ||
        !same_trajectory_backends(ck.backend, backend))
      out << "restart: note: the integrator (kind, dt, seed) or backend differs from the checkpoint's run ("
          << ck.integrator << ", dt " << ck.dt << ", seed " << ck.seed << ", " << ck.backend
          << "): the continuation is valid but not bitwise identical to an uninterrupted run\n";
    if (p.first >= p.last) {
      out << "restart: the run already reached step " << p.last << "; nothing to do (" << fe.steps
          << ", with N counted from step " << ck.first_step << ", goes on)\n";
      return false;
    }
  }
  for (const std::string& w : time_step_warnings(cfg, p.sys.state, p.sys.topology))
    err << fe.who << ": warning: " << w << "\n";
  std::vector<std::string> charge_warnings;
  for (const std::string& note : electrostatics_notes(cfg, p.sys.state, &charge_warnings)) out << note << "\n";
  for (const std::string& w : charge_warnings) err << fe.who << ": warning: " << w << "\n";
  out << "steps: " << p.last - p.first << " (" << p.first << " -> " << p.last
      << "), output: " << (r.no_files ? std::string("none") : p.files.prefix + ".*") << "\n"
      << std::flush;
  return true;
}

}  // namespace pairmd
