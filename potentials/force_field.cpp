#include "potentials/force_field.h"

#include <algorithm>

namespace pairmd {

double PairTerm::max_cutoff() const {
  double rc = 0.0;
  for (const PairCoeffs& c : coeffs) rc = std::max(rc, pair_cutoff(kind, c));
  return rc;
}

}  // namespace pairmd
