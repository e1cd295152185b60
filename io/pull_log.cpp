#include "io/pull_log.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "engine/pulling.h"
#include "io/h5md_writer.h"

namespace pairmd {

PullLog::PullLog(const RunConfig& cfg, const PullSettings& pull, const std::string& csv_path, bool append,
                 H5mdWriter* trajectory)
    : pull_(pull),
      every_(cfg.pulling.every > 0 ? cfg.pulling.every : cfg.output.thermo_every),
      path_(csv_path),
      trajectory_(trajectory) {
  const bool real = cfg.model.units.name == "real";
  length_unit_ = real ? "Angstrom" : "";
  force_unit_ = real ? "kcal mol-1 Angstrom-1" : "";
  // "x": created here or not at all; an existing file is never truncated.
  csv_ = std::fopen(csv_path.c_str(), append ? "a" : "wx");
  if (!csv_) throw std::runtime_error("cannot write the pulling CSV '" + csv_path + "': " + std::strerror(errno));
  if (!append && std::fputs("step,time,anchor_shift,end_to_end,extension,force\n", csv_) < 0)
    throw std::runtime_error("writing the pulling CSV '" + csv_path + "' failed: " + std::strerror(errno));
}

PullLog::~PullLog() {
  if (csv_) std::fclose(csv_);
}

void PullLog::write(const Frame& frame) {
  const int64_t step = frame.state.step;
  if (step <= last_step_) return;
  last_step_ = step;
  const PullReading r = read_pull(pull_, frame.state);
  if (csv_) {
    // A row goes out whole and is flushed at once, as the thermo CSV's.
    char row[256];
    const int len = std::snprintf(row, sizeof row, "%lld,%.10g,%.10g,%.10g,%.10g,%.10g\n", static_cast<long long>(step),
                                  frame.time, r.anchor_shift, r.end_to_end, r.extension, r.force);
    if (std::fwrite(row, 1, static_cast<size_t>(len), csv_) != static_cast<size_t>(len) || std::fflush(csv_) != 0) {
      const std::string why = std::strerror(errno);
      std::fclose(csv_);
      csv_ = nullptr;
      throw std::runtime_error("writing the pulling CSV '" + path_ + "' failed: " + why);
    }
  }
  if (trajectory_) {
    trajectory_->write_scalar_frame("pull_force", step, frame.time, r.force, force_unit_);
    trajectory_->write_scalar_frame("pull_extension", step, frame.time, r.extension, length_unit_);
    trajectory_->write_scalar_frame("pull_end_to_end", step, frame.time, r.end_to_end, length_unit_);
    trajectory_->write_scalar_frame("pull_anchor_shift", step, frame.time, r.anchor_shift, length_unit_);
  }
}

void PullLog::observe(const RunContext& ctx, const Frame& frame) {
  (void)ctx;
  write(frame);
}

void PullLog::finish(const RunContext& ctx, const Frame& frame) {
  // The last step of a completed run is recorded even off the interval (as the thermo log does).
  if (frame.state.step == ctx.last_step) write(frame);
  if (csv_) {
    std::fclose(csv_);
    csv_ = nullptr;
  }
}

}  // namespace pairmd
