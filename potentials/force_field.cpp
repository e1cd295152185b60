#include "potentials/force_field.h"

#include <algorithm>

namespace pairmd {

double PairTerm::max_cutoff() const {
  double rc = 0.0;
  for (const PairCoeffs& c : coeffs) {
    const double r = kind == PairKind::WCA ? (c.epsilon != 0 ? WCA<double>::cutoff(c) : 0.0) : c.rcut;
    rc = std::max(rc, r);
  }
  return rc;
}

}  // namespace pairmd
