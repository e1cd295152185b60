#include "io/checkpoint_run.h"

#include "integrators/registry.h"

namespace pairmd {

CheckpointRun checkpoint_run(const RunConfig& config, int64_t first_step, const std::string& backend,
                             const std::string& prefix, int64_t last_step, const std::string& ensemble,
                             const PullSettings& pulling) {
  CheckpointRun r;
  r.first_step = first_step;
  r.last_step = last_step;
  r.prefix = prefix;
  r.run_id = config.run_id;
  r.seed = config.model.integrator.seed;
  r.dt = config.model.integrator.dt;
  r.integrator = integrator_kind_name(config.model.integrator.kind);
  r.backend = backend;
  r.config_text = config.text;
  r.config_path = config.path;
  r.overrides = config.override_specs;
  r.time_unit = config.model.units.time_unit();
  r.ensemble = ensemble;
  r.pulling = pulling;
  return r;
}

void write_checkpoint(const std::string& path, const SystemState& state, const Topology& topology,
                      const RunConfig& config, int64_t first_step, const std::string& backend,
                      const std::string& prefix, int64_t last_step, const std::string& ensemble,
                      const PullSettings& pulling) {
  write_checkpoint(path, state, topology,
                   checkpoint_run(config, first_step, backend, prefix, last_step, ensemble, pulling));
}

CheckpointWriter::CheckpointWriter(std::string path, int64_t every, int64_t first_step, std::string backend,
                                   std::string prefix)
    : path_(std::move(path)),
      every_(every),
      first_step_(first_step),
      backend_(std::move(backend)),
      prefix_(std::move(prefix)) {}

void CheckpointWriter::write(const RunContext& ctx, const SystemState& state) {
  for (auto& f : before_) f();
  write_checkpoint(path_, state, ctx.topology, ctx.config, first_step_, backend_, prefix_, ctx.last_step,
                   ensemble_ ? ensemble_() : std::string(), pulling_);
  last_step_ = state.step;
}

void CheckpointWriter::observe(const RunContext& ctx, const Frame& frame) {
  // The start frame is already saved (the config or the checkpoint it came from).
  if (frame.state.step == ctx.first_step) return;
  write(ctx, frame.state);
}

void CheckpointWriter::finish(const RunContext& ctx, const Frame& frame) {
  if (frame.state.step == last_step_) return;
  try {
    write(ctx, frame.state);
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

void check_checkpoint_units(const Checkpoint& ck, const RunConfig& cfg, const std::string& path) {
  const std::string want = cfg.model.units.time_unit();
  // Checkpoints from before the time unit was stored are of real runs in ps (or of lj runs).
  const std::string had = !ck.time_unit.empty() ? ck.time_unit : cfg.model.units.reduced() ? want : "ps";
  if (had == want) return;
  throw ConfigError("pairmd run: --restart: checkpoint '" + path + "' was written with time in " + had +
                    " (units: real meant ps before pairmd took LAMMPS's real units, fs); its velocities and time "
                    "step would be read as " +
                    want +
                    ". Start a new run from its trajectory instead (system.file "
                    "converts the units the file names) with dt in " +
                    want);
}

}  // namespace pairmd
