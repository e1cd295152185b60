// A minimal line plot written as SVG (no plotting library needed on the GPU machine): log-log
// (scaling plots, the default) or linear axes (force-extension curves, io/pull_log.h; replica walks).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pairmd {

class SvgPlot {
 public:
  SvgPlot(std::string title, std::string xlabel, std::string ylabel)
      : title_(std::move(title)), xlabel_(std::move(xlabel)), ylabel_(std::move(ylabel)) {}
  void add_series(const std::string& name, const std::vector<std::pair<double, double>>& points) {
    series_.push_back({name, points});
  }
  // Linear axes with round ticks (instead of decades), and points drawn as a line only.
  void set_linear(bool linear) { linear_ = linear; }
  // A dot at each point of log-log axes (default); off for long series. Linear axes draw lines only.
  void set_markers(bool markers) { markers_ = markers; }
  // new_file: create `path` exclusively (io/output_files.h, create_new_file), for a temporary.
  void write(const std::string& path, bool new_file = false) const;

 private:
  struct Series {
    std::string name;
    std::vector<std::pair<double, double>> points;
  };
  std::string title_, xlabel_, ylabel_;
  std::vector<Series> series_;
  bool linear_ = false, markers_ = true;
  std::string write_linear() const;
};

}  // namespace pairmd
