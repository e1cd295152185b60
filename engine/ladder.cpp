#include "engine/ladder.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace pairmd {

std::vector<double> geometric_ladder(double t_min, double t_max, int count) {
  if (count < 1) throw std::invalid_argument("a temperature ladder needs at least one temperature");
  if (count == 1) return {t_min};
  if (!(t_min > 0 && t_max > t_min && std::isfinite(t_max)))
    throw std::invalid_argument("a geometric ladder needs 0 < minimum < maximum");
  std::vector<double> t(static_cast<size_t>(count));
  const double ratio = std::log(t_max / t_min) / (count - 1);
  for (int k = 0; k < count; ++k) t[k] = t_min * std::exp(ratio * k);
  // The ends exactly as given (exp(log(x)) need not round back to x).
  t.front() = t_min;
  t.back() = t_max;
  return t;
}

std::string ladder_problem(const std::vector<double>& t) {
  if (t.empty()) return "it has no temperatures";
  for (size_t k = 0; k < t.size(); ++k) {
    std::ostringstream m;
    if (!(std::isfinite(t[k]) && t[k] > 0)) {
      m << "temperature " << k << " is " << t[k] << ", not a number > 0";
      return m.str();
    }
    if (k > 0 && !(t[k] > t[k - 1])) {
      m << "it is not increasing: temperature " << k << " (" << t[k] << ") is not above temperature " << k - 1 << " ("
        << t[k - 1] << ")";
      return m.str();
    }
  }
  return "";
}

}  // namespace pairmd
