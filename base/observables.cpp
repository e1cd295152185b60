#include "base/observables.h"

#include <limits>

namespace pairmd {

double temperature(const Observables& o, double dof, double kB) { return dof > 0 ? 2.0 * o.kinetic / (dof * kB) : 0.0; }

double pressure(const Observables& o, double volume) {
  if (!(volume > 0)) return std::numeric_limits<double>::quiet_NaN();
  return (2.0 * o.kinetic + o.virial) / (3.0 * volume);
}

}  // namespace pairmd
