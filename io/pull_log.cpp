#include "io/pull_log.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "engine/pulling.h"
#include "io/h5md_writer.h"
#include "io/svg_plot.h"

namespace pairmd {

void write_pull_plot(const std::string& csv_path, const std::string& svg_path, const std::string& title,
                     const std::string& length_unit, const std::string& force_unit) {
  std::ifstream in(csv_path);
  if (!in) throw std::runtime_error("cannot read the pulling CSV '" + csv_path + "'");
  std::vector<std::pair<double, double>> points;  // (extension, force)
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::stringstream row(line);
    std::vector<double> v;
    for (std::string cell; std::getline(row, cell, ',');) v.push_back(std::strtod(cell.c_str(), nullptr));
    if (v.size() == 6) points.push_back({v[4], v[5]});
  }
  SvgPlot plot(title, "extension (" + length_unit + ")", "pulling force (" + force_unit + ")");
  plot.set_linear(true);
  plot.add_series("force", points);
  const std::string tmp = svg_path + ".tmp." + std::to_string(getpid());
  try {
    plot.write(tmp, true);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), svg_path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write the force-extension plot '" + svg_path + "': " + why);
  }
}

PullLog::PullLog(const RunConfig& cfg, const PullSettings& pull, const std::string& csv_path, bool append,
                 H5mdWriter* trajectory, const std::string& svg_path)
    : pull_(pull),
      every_(cfg.pulling.every > 0 ? cfg.pulling.every : cfg.output.thermo_every),
      path_(csv_path),
      svg_path_(svg_path),
      title_(cfg.title.empty() ? "force-extension" : cfg.title + ": force-extension"),
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
  if (!svg_path_.empty())
    write_pull_plot(path_, svg_path_, title_, length_unit_.empty() ? "length" : "A",
                    force_unit_.empty() ? "energy/length" : "kcal/(mol A)");
}

}  // namespace pairmd
