// What a run is, before it starts: its config (with a checkpoint's settings on a restart), its
// output prefix and what happens to files already there, its start state and its backend. The
// pairmd program (cli/cmd_run.cpp) and the Python module (python/module/) both go through here,
// so a run refuses, replaces and continues files the same way whoever starts it
// (docs/output.md).
//
// The steps, in order: load the config (with a checkpoint's settings on a restart); claim the
// output prefix and decide what happens to files already there; build or load the start state
// and the backend. Everything wrong with the input is found up to here, before any output is
// touched (ConfigError); open_outputs (session/run_outputs.h) comes next.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/config.h"
#include "engine/system_builder.h"
#include "io/checkpoint.h"
#include "io/output_files.h"

namespace pairmd {

struct RunPlan;

// What a front end asks to run: the pairmd program's options, the Python module's arguments.
struct RunRequest {
  std::string config_path;      // a YAML file (may be empty on a restart: the checkpoint holds it)
  bool config_is_text = false;  // the config is config_text (the Python module: a string or a dict)
  std::string config_text;
  std::string config_name;             // stands for the file in messages when the config is text
  std::vector<std::string> overrides;  // key.path=value, as --set takes them, in order
  std::string restart;                 // a checkpoint to continue ("": a new run)
  std::string output;                  // the output prefix instead of output.prefix ("": none)
  bool overwrite = false;              // replace the files of an earlier run with this prefix
  bool no_files = false;               // write no files at all (no claim; the Python module's output=None)
  // A replica of an ensemble (replicas/ensemble_plan.h sets these; docs/replicas.md). Without
  // them a config with a replicas section, or a replica's checkpoint, is refused.
  // replica_setup: called once the config (and, on a restart, the checkpoint) is loaded, before
  // the prefix is decided and anything is claimed or built: which replica this run is, its seed
  // and temperature; throws ConfigError. replica_prefix: then the replica's own prefix (BASE.r03)
  // for the prefix that the config or `output` names (unchanged for a single run).
  std::function<std::string(const std::string& base)> replica_prefix;
  std::function<void(RunPlan& plan)> replica_setup;
  // Makes the run's backend instead of make_backend (the replicas of an ensemble in one process
  // share one GPU ensemble: replicas/local_ensemble.h); may return null for make_backend's.
  std::function<std::unique_ptr<Backend>(const RunPlan& plan, const Model& model, std::string* why)> backend_hook;
};

// How a front end names its options in messages.
struct FrontEnd {
  std::string who = "pairmd run";                  // the start of messages
  std::string overwrite = "--overwrite";           // replaces an earlier run's files
  std::string output = "--output";                 // sets the output prefix: OUTPUT PREFIX
  std::string output_example = "--output PREFIX";  // ... as one would write it
  std::string restart = "--restart";
  std::string set = "--set";        // the config overrides
  std::string steps = "--steps N";  // sets the run's length
  // The command that continues the run of `checkpoint`.
  std::function<std::string(const std::string& checkpoint)> continue_with;
};

// What this run is: its config, its start, where it ends and where its files go.
struct RunPlan {
  RunConfig cfg;
  BuiltSystem sys;
  Checkpoint ck;
  bool restart = false;
  bool continues_files = false;  // a restart into the files of the run that wrote the checkpoint
  int64_t first = 0, last = 0;
  OutputFiles files;
  std::vector<std::string> notes;  // what a restart takes over or changes, for the log
};

// A new run's id: 64 random bits in hex.
std::string new_run_id();

// Loads the config and, on a restart, the checkpoint: the config gets the checkpoint's overrides
// first, then the request's; the prefix is the checkpoint's unless the request names another.
// Notes what differs from the run that wrote the checkpoint. Throws ConfigError.
void load_plan(const RunRequest& r, const FrontEnd& fe, RunPlan& p);

// The files of an earlier run on this prefix: those of its set that exist, except an empty
// PREFIX.log that is this command's own standard output or error (a shell redirect made it).
std::vector<std::string> earlier_run_files(const OutputFiles& files);

// What happens to the files of an earlier run on this prefix. A new run, or a restart into a
// new prefix, creates its files: existing ones are an error unless the request says to
// overwrite them. A restart into its run's own files continues them. Whatever the request, a
// file of the set that is not a regular file (a directory), is one of the run's inputs (config,
// start file, pair lists, the checkpoint of a restart into new files), belongs to another run,
// or is this command's standard output or error (other than PREFIX.log) is refused. Throws
// ConfigError.
void check_existing_outputs(const RunRequest& r, const FrontEnd& fe, const RunPlan& p);

// The start state: the checkpoint's on a restart (its config must describe the checkpoint's
// system), else the system the config builds. Throws ConfigError.
void build_start(const RunRequest& r, RunPlan& p);

// Everything before the outputs are opened: the plan, the claim on its prefix (none with
// no_files), the backend and the estimates; warnings (a prefix that cannot be locked) go to
// `err`. Throws ConfigError for bad input (nothing written), std::runtime_error when the claim's
// lock file cannot be created.
struct PreparedRun {
  RunPlan plan;
  std::unique_ptr<OutputClaim> claim;
  std::unique_ptr<Backend> backend;
  std::string why;      // the backend, for the log
  MemoryEstimate need;  // the run's memory estimate, for the log
};
void prepare_run(const RunRequest& r, const FrontEnd& fe, PreparedRun& run, std::ostream& err);

// The run's first lines: the system, the backend, the memory estimate, and for a restart what
// it takes over or changes and from which step to which it goes; time-step warnings go to
// `err`. Returns false when a restart has nothing left to do.
bool describe_start(const RunRequest& r, const FrontEnd& fe, const PreparedRun& run, std::ostream& out,
                    std::ostream& err);

// Drops the rows of a thermo CSV at or after `step` (the restart writes its first row again),
// through a temporary file and a rename. A missing file is left missing. Returns the rows dropped.
int64_t truncate_thermo_csv(const std::string& path, int64_t step);

}  // namespace pairmd
