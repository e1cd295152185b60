// A minimal line plot written as SVG (no plotting library needed on the GPU machine): log-log
// axes by default, linear ones on request.
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
  // Linear axes instead of log-log (points with x or y <= 0 are then drawn too).
  void set_linear(bool linear) { linear_ = linear; }
  // A dot at each point (default); off for long series.
  void set_markers(bool markers) { markers_ = markers; }
  void write(const std::string& path) const;

 private:
  struct Series {
    std::string name;
    std::vector<std::pair<double, double>> points;
  };
  std::string title_, xlabel_, ylabel_;
  std::vector<Series> series_;
  bool linear_ = false, markers_ = true;
};

}  // namespace pairmd
