// A minimal log-log line plot written as SVG (no plotting library needed on the GPU machine).
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
  void write(const std::string& path) const;

 private:
  struct Series {
    std::string name;
    std::vector<std::pair<double, double>> points;
  };
  std::string title_, xlabel_, ylabel_;
  std::vector<Series> series_;
};

}  // namespace pairmd
