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

#include "base/version.h"
#include "engine/pulling.h"
#include "engine/time_step_check.h"
#include "io/csv_rows.h"
#include "session/run_setup.h"

namespace pairmd {

namespace {

bool same_file(const std::string& a, const std::string& b) {
  struct stat x, y;
  return stat(a.c_str(), &x) == 0 && stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

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
// bonds. The config's own system is built only to compare (no relaxation).
void check_same_system(const RunConfig& cfg, const Checkpoint& ck, const std::string& ck_path) {
  RunConfig probe = cfg;
  probe.system.relax.steps = 0;
  const BuiltSystem sys = build_system(probe);
  const SystemState& a = sys.state;
  const SystemState& b = ck.state;
  auto fail = [&](const std::string& what) {
    throw ConfigError(cfg.path + ": does not describe the system of checkpoint '" + ck_path + "': " + what);
  };
  if (a.size() != b.size())
    fail("the config builds " + std::to_string(a.size()) + " particles, the checkpoint holds " +
         std::to_string(b.size()));
  if (cfg.system.types.size() != b.type_names.size()) fail("different number of particle types");
  for (size_t t = 0; t < b.type_names.size(); ++t)
    if (cfg.system.types[t].name != b.type_names[t])
      fail("particle type " + std::to_string(t) + " is '" + b.type_names[t] + "' in the checkpoint, '" +
           cfg.system.types[t].name + "' in the config");
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
  for (const Bond& bond : ck.topology.bonds)
    if (bond.type >= static_cast<int>(cfg.model.force_field.bond_types.size()))
      fail("its bonds use bond type " + std::to_string(bond.type) + ", which force_field.bonds does not define");
  if (cfg.system.periodic != b.box.periodic) fail("different boundary");
  validate_against_box(cfg, b.box);
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

// Ensembles run under mpirun with the pairmd program, which sets the replica hooks.
void refuse_ensemble(const RunRequest& r, const FrontEnd& fe, const RunPlan& p) {
  if (r.replica_setup) return;
  if (p.cfg.replicas.count > 0) {
    auto it = p.cfg.locations.find("replicas.count");
    throw ConfigError((it != p.cfg.locations.end() ? it->second : p.cfg.path) + ": replicas: " + fe.who +
                      " runs one simulation; a replica ensemble runs under mpirun with the pairmd program "
                      "(mpirun -np K pairmd run CONFIG; docs/replicas.md)");
  }
  if (p.restart && !p.ck.ensemble.empty())
    throw ConfigError(fe.who + ": " + fe.restart + ": '" + r.restart +
                      "' is the checkpoint of a replica of an ensemble; restart the whole ensemble with the pairmd "
                      "program (mpirun -np K pairmd run --restart PREFIX.r{replica}.checkpoint.h5; docs/replicas.md)");
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
  p.files.prefix = !output.empty() ? output : !p.ck.prefix.empty() ? p.ck.prefix : derived;
  // Checkpoints written before the prefix was stored continue whatever prefix the run has.
  p.continues_files = !r.no_files && (p.ck.prefix.empty() || same_prefix(p.files.prefix, p.ck.prefix));
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
  if (r.no_files)
    p.notes.push_back("restart: no output files (the run of the checkpoint wrote " + p.ck.prefix + ".*)");
  else if (!p.continues_files)
    p.notes.push_back("restart: output prefix " + p.ck.prefix + " -> " + p.files.prefix + " (" + fe.output +
                      "): new files, starting at step " + std::to_string(p.first));
  else if (r.output.empty() && !p.ck.prefix.empty() && !same_prefix(derived, p.ck.prefix))
    p.notes.push_back("restart: continues the files " + p.ck.prefix + ".* of its run (output.prefix " + derived +
                      " is not used; " + fe.output + " " + derived_base + " would start new files there)");
  p.cfg.output.prefix = p.files.prefix;
  // The run keeps its id in its own files; new files are a new run's.
  p.cfg.run_id = p.continues_files && !p.ck.run_id.empty() ? p.ck.run_id : new_run_id();
}

void check_existing_outputs(const RunRequest& r, const FrontEnd& fe, const RunPlan& p) {
  if (r.no_files) return;
  const std::vector<std::string> there = p.files.existing();
  if (p.continues_files) {
    if (r.overwrite)
      throw ConfigError(fe.who + ": " + fe.overwrite + ": a restart continues the files of its run (" + p.files.prefix +
                        ".*) and replaces nothing; to start new files from the checkpoint, give " + fe.output +
                        " NEW_PREFIX");
    // The prefix may have been taken over by another run since this checkpoint was written (a
    // copy of it, restarted after the prefix was reused with --overwrite): that run's newest
    // checkpoint says whose files these are.
    const std::string theirs = p.files.checkpoint();
    if (!p.ck.run_id.empty() && access(theirs.c_str(), F_OK) == 0 && !same_file(theirs, r.restart)) {
      std::string other;
      try {
        other = read_checkpoint(theirs).run_id;
      } catch (const std::runtime_error&) {
        // A damaged checkpoint says nothing; the trajectory's own run id is checked when it opens.
      }
      if (!other.empty() && other != p.ck.run_id)
        throw ConfigError(fe.who + ": the files " + p.files.prefix + ".* belong to another run than " + r.restart +
                          " (run ids " + other + " and " + p.ck.run_id + "); nothing was written. To go on from " +
                          r.restart + ", start new files with " + fe.output + " NEW_PREFIX");
    }
    return;
  }
  if (there.empty() || r.overwrite) return;
  std::string list;
  for (const std::string& f : there) list += (list.empty() ? "" : ", ") + f;
  std::string how;
  if (!p.restart && fe.continue_with && std::find(there.begin(), there.end(), p.files.checkpoint()) != there.end())
    how += "\n  to continue that run:  " + fe.continue_with(p.files.checkpoint());
  how += "\n  to replace its files:  add " + fe.overwrite + "\n  to keep them:          choose another prefix with " +
         fe.output_example;
  throw ConfigError(fe.who + ": the output prefix '" + p.files.prefix + "' holds files of an earlier run (" + list +
                    "); nothing was written" + how);
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
  // The pulling's anchor and tether points are those of the run's start, which the config builds.
  if (pulling_needs_start(p.cfg))
    p.sys.pulling = build_system(p.cfg).pulling;
  else
    p.sys.pulling = resolve_pulling(p.cfg, p.sys.state);
}

void prepare_run(const RunRequest& r, const FrontEnd& fe, PreparedRun& run, std::ostream& err) {
  RunPlan& p = run.plan;
  load_plan(r, fe, p);
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
    run.backend = make_backend(p.cfg.backend, model, p.sys.state, &run.why);
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
        ck.integrator != integrator_kind_name(cfg.model.integrator.kind) || ck.backend != backend)
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
  out << "steps: " << p.last - p.first << " (" << p.first << " -> " << p.last
      << "), output: " << (r.no_files ? std::string("none") : p.files.prefix + ".*") << "\n"
      << std::flush;
  return true;
}

}  // namespace pairmd
