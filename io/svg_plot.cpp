#include "io/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "io/output_files.h"

namespace pairmd {

namespace {

// Round tick spacing (1, 2 or 5 times a power of ten) for about 6 ticks over [lo, hi].
double tick_step(double lo, double hi) {
  const double raw = std::max(hi - lo, 1e-300) / 6;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

std::string fmt(double v) {
  std::ostringstream s;
  s << (std::fabs(v) < 1e-12 ? 0.0 : v);
  return s.str();
}

}  // namespace

std::string SvgPlot::write_linear() const {
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (const auto& s : series_)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  if (xmin > xmax) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax == ymin) ymax = ymin + 1;
  const double dx = tick_step(xmin, xmax), dy = tick_step(ymin, ymax);
  const double x0 = std::floor(xmin / dx) * dx, x1 = std::ceil(xmax / dx) * dx;
  const double y0 = std::floor(ymin / dy) * dy, y1 = std::ceil(ymax / dy) * dy;
  const double W = 760, H = 480, ml = 80, mr = 190, mt = 40, mb = 60;
  auto X = [&](double x) { return ml + (x - x0) / (x1 - x0) * (W - ml - mr); };
  auto Y = [&](double y) { return H - mb - (y - y0) / (y1 - y0) * (H - mt - mb); };
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"};
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << W / 2 << "' y='22' text-anchor='middle' font-size='14'>" << title_ << "</text>\n";
  for (double v = x0; v <= x1 + 0.5 * dx; v += dx)
    o << "<line x1='" << X(v) << "' y1='" << mt << "' x2='" << X(v) << "' y2='" << H - mb
      << "' stroke='#ddd'/><text x='" << X(v) << "' y='" << H - mb + 18 << "' text-anchor='middle'>" << fmt(v)
      << "</text>\n";
  for (double v = y0; v <= y1 + 0.5 * dy; v += dy)
    o << "<line x1='" << ml << "' y1='" << Y(v) << "' x2='" << W - mr << "' y2='" << Y(v)
      << "' stroke='#ddd'/><text x='" << ml - 6 << "' y='" << Y(v) + 4 << "' text-anchor='end'>" << fmt(v)
      << "</text>\n";
  o << "<text x='" << (ml + W - mr) / 2 << "' y='" << H - 15 << "' text-anchor='middle'>" << xlabel_ << "</text>\n"
    << "<text transform='translate(18," << (mt + H - mb) / 2 << ") rotate(-90)' text-anchor='middle'>" << ylabel_
    << "</text>\n";
  for (size_t k = 0; k < series_.size(); ++k) {
    const char* c = colors[k % 7];
    std::ostringstream pts;
    for (const auto& [x, y] : series_[k].points)
      if (std::isfinite(x) && std::isfinite(y)) pts << X(x) << "," << Y(y) << " ";
    o << "<polyline fill='none' stroke='" << c << "' stroke-width='1.5' points='" << pts.str() << "'/>\n";
    o << "<line x1='" << W - mr + 15 << "' y1='" << mt + 20 * k + 10 << "' x2='" << W - mr + 40 << "' y2='"
      << mt + 20 * k + 10 << "' stroke='" << c << "' stroke-width='2'/><text x='" << W - mr + 46 << "' y='"
      << mt + 20 * k + 14 << "'>" << series_[k].name << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

namespace {

void put(const std::string& path, const std::string& text, bool new_file) {
  if (new_file) {
    try {
      write_new_file(path, text);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("cannot write plot: ") + e.what());
    }
    return;
  }
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write plot '" + path + "'");
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write plot '" + path + "'");
}

}  // namespace

void SvgPlot::write(const std::string& path, bool new_file) const {
  if (linear_) return put(path, write_linear(), new_file);
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (const auto& s : series_)
    for (const auto& [x, y] : s.points) {
      if (x <= 0 || y <= 0) continue;
      xmin = std::min(xmin, x), xmax = std::max(xmax, x), ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  if (xmin > xmax) xmin = 1, xmax = 10, ymin = 1, ymax = 10;
  const double lx0 = std::floor(std::log10(xmin)), lx1 = std::ceil(std::log10(xmax) + 1e-9);
  const double ly0 = std::floor(std::log10(ymin)), ly1 = std::ceil(std::log10(ymax) + 1e-9);
  const double W = 760, H = 480, ml = 80, mr = 190, mt = 40, mb = 60;
  auto X = [&](double x) { return ml + (std::log10(x) - lx0) / std::max(lx1 - lx0, 1e-9) * (W - ml - mr); };
  auto Y = [&](double y) { return H - mb - (std::log10(y) - ly0) / std::max(ly1 - ly0, 1e-9) * (H - mt - mb); };
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"};
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
    << "' font-family='sans-serif' font-size='12'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n"
    << "<text x='" << W / 2 << "' y='22' text-anchor='middle' font-size='14'>" << title_ << "</text>\n";
  for (double e = lx0; e <= lx1; ++e)
    o << "<line x1='" << X(std::pow(10, e)) << "' y1='" << mt << "' x2='" << X(std::pow(10, e)) << "' y2='" << H - mb
      << "' stroke='#ddd'/><text x='" << X(std::pow(10, e)) << "' y='" << H - mb + 18 << "' text-anchor='middle'>1e"
      << e << "</text>\n";
  for (double e = ly0; e <= ly1; ++e)
    o << "<line x1='" << ml << "' y1='" << Y(std::pow(10, e)) << "' x2='" << W - mr << "' y2='" << Y(std::pow(10, e))
      << "' stroke='#ddd'/><text x='" << ml - 6 << "' y='" << Y(std::pow(10, e)) + 4 << "' text-anchor='end'>1e" << e
      << "</text>\n";
  o << "<text x='" << (ml + W - mr) / 2 << "' y='" << H - 15 << "' text-anchor='middle'>" << xlabel_ << "</text>\n"
    << "<text transform='translate(18," << (mt + H - mb) / 2 << ") rotate(-90)' text-anchor='middle'>" << ylabel_
    << "</text>\n";
  for (size_t k = 0; k < series_.size(); ++k) {
    const char* c = colors[k % 7];
    std::ostringstream pts;
    for (const auto& [x, y] : series_[k].points)
      if (x > 0 && y > 0) pts << X(x) << "," << Y(y) << " ";
    o << "<polyline fill='none' stroke='" << c << "' stroke-width='2' points='" << pts.str() << "'/>\n";
    if (markers_)
      for (const auto& [x, y] : series_[k].points)
        if (x > 0 && y > 0) o << "<circle cx='" << X(x) << "' cy='" << Y(y) << "' r='3' fill='" << c << "'/>\n";
    o << "<line x1='" << W - mr + 15 << "' y1='" << mt + 20 * k + 10 << "' x2='" << W - mr + 40 << "' y2='"
      << mt + 20 * k + 10 << "' stroke='" << c << "' stroke-width='2'/><text x='" << W - mr + 46 << "' y='"
      << mt + 20 * k + 14 << "'>" << series_[k].name << "</text>\n";
  }
  o << "</svg>\n";
  put(path, o.str(), new_file);
}

}  // namespace pairmd
