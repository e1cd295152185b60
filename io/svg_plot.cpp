#include "io/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pairmd {

namespace {

// Tick positions of a linear axis over [lo, hi]: 1, 2 or 5 times a power of ten apart, about 6.
std::vector<double> linear_ticks(double lo, double hi) {
  const double raw = (hi - lo) / 6;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw) {
      step = m * p;
      break;
    }
  std::vector<double> t;
  for (double x = std::ceil(lo / step - 1e-9) * step; x <= hi + 1e-9 * step; x += step) t.push_back(std::fabs(x) < 1e-12 * step ? 0 : x);
  return t;
}

std::string number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

}  // namespace

void SvgPlot::write(const std::string& path) const {
  auto shown = [&](double x, double y) { return std::isfinite(x) && std::isfinite(y) && (linear_ || (x > 0 && y > 0)); };
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (const auto& s : series_)
    for (const auto& [x, y] : s.points) {
      if (!shown(x, y)) continue;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  if (xmin > xmax) xmin = 1, xmax = 10, ymin = 1, ymax = 10;
  // Axis ends: whole decades (log), or the data's range with a margin (linear).
  double x0, x1, y0, y1;
  if (linear_) {
    if (xmax == xmin) xmax = xmin + 1;
    if (ymax == ymin) ymax = ymin + 1;
    const double my = 0.05 * (ymax - ymin);
    x0 = xmin, x1 = xmax, y0 = ymin - my, y1 = ymax + my;
  } else {
    x0 = std::floor(std::log10(xmin)), x1 = std::ceil(std::log10(xmax) + 1e-9);
    y0 = std::floor(std::log10(ymin)), y1 = std::ceil(std::log10(ymax) + 1e-9);
  }
  auto ax = [&](double x) { return linear_ ? x : std::log10(x); };
  const double W = 760, H = 480, ml = 80, mr = 190, mt = 40, mb = 60;
  auto X = [&](double x) { return ml + (ax(x) - x0) / std::max(x1 - x0, 1e-300) * (W - ml - mr); };
  auto Y = [&](double y) { return H - mb - (ax(y) - y0) / std::max(y1 - y0, 1e-300) * (H - mt - mb); };
  std::vector<std::pair<double, std::string>> xt, yt;  // tick values (in data units) and labels
  if (linear_) {
    for (double t : linear_ticks(x0, x1)) xt.push_back({t, number(t)});
    for (double t : linear_ticks(y0, y1)) yt.push_back({t, number(t)});
  } else {
    for (double e = x0; e <= x1; ++e) xt.push_back({std::pow(10, e), "1e" + number(e)});
    for (double e = y0; e <= y1; ++e) yt.push_back({std::pow(10, e), "1e" + number(e)});
  }
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"};
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H << "' font-family='sans-serif' font-size='12'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << W / 2 << "' y='22' text-anchor='middle' font-size='14'>" << title_ << "</text>\n";
  for (const auto& [v, label] : xt)
    o << "<line x1='" << X(v) << "' y1='" << mt << "' x2='" << X(v) << "' y2='" << H - mb
      << "' stroke='#ddd'/><text x='" << X(v) << "' y='" << H - mb + 18 << "' text-anchor='middle'>" << label
      << "</text>\n";
  for (const auto& [v, label] : yt)
    o << "<line x1='" << ml << "' y1='" << Y(v) << "' x2='" << W - mr << "' y2='" << Y(v)
      << "' stroke='#ddd'/><text x='" << ml - 6 << "' y='" << Y(v) + 4 << "' text-anchor='end'>" << label
      << "</text>\n";
  o << "<text x='" << (ml + W - mr) / 2 << "' y='" << H - 15 << "' text-anchor='middle'>" << xlabel_ << "</text>\n"
    << "<text transform='translate(18," << (mt + H - mb) / 2 << ") rotate(-90)' text-anchor='middle'>" << ylabel_ << "</text>\n";
  for (size_t k = 0; k < series_.size(); ++k) {
    const char* c = colors[k % 7];
    std::ostringstream pts;
    for (const auto& [x, y] : series_[k].points)
      if (shown(x, y)) pts << X(x) << "," << Y(y) << " ";
    o << "<polyline fill='none' stroke='" << c << "' stroke-width='2' points='" << pts.str() << "'/>\n";
    if (markers_)
      for (const auto& [x, y] : series_[k].points)
        if (shown(x, y)) o << "<circle cx='" << X(x) << "' cy='" << Y(y) << "' r='3' fill='" << c << "'/>\n";
    o << "<line x1='" << W - mr + 15 << "' y1='" << mt + 20 * k + 10 << "' x2='" << W - mr + 40 << "' y2='"
      << mt + 20 * k + 10 << "' stroke='" << c << "' stroke-width='2'/><text x='" << W - mr + 46 << "' y='"
      << mt + 20 * k + 14 << "'>" << series_[k].name << "</text>\n";
  }
  o << "</svg>\n";
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write plot '" + path + "'");
  f << o.str();
  f.close();
  if (!f) throw std::runtime_error("cannot write plot '" + path + "'");
}

}  // namespace pairmd
