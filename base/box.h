// Orthorhombic simulation box: periodic in all three directions, or open (no boundaries).
//
// Positions of a periodic box are kept wrapped into [lo, lo + L); the number of times a
// particle has crossed each face is kept in its image counter, so the unwrapped position is
// x + image * L.
#pragma once

#include "base/hd.h"
#include "base/vec3.h"

namespace pairmd {

template <typename Real>
struct BoxGeometry {
  Vec3<Real> lo;  // lower corner
  Vec3<Real> L;   // edge lengths
  bool periodic;  // false: open boundaries, no wrapping, no minimum image

  // Minimum-image separation. Valid for |d| < 1.5 L, which holds for wrapped positions.
  PAIRMD_HD Vec3<Real> min_image(Vec3<Real> d) const {
    if (periodic) {
      d.x = wrap_component(d.x, L.x);
      d.y = wrap_component(d.y, L.y);
      d.z = wrap_component(d.z, L.z);
    }
    return d;
  }

  // Put x back into the box after a move of less than one box length, counting crossings.
  PAIRMD_HD void wrap(Vec3<Real>& x, Int3& image) const {
    if (!periodic) return;
    wrap_coordinate(x.x, image.x, lo.x, L.x);
    wrap_coordinate(x.y, image.y, lo.y, L.y);
    wrap_coordinate(x.z, image.z, lo.z, L.z);
  }

  PAIRMD_HD Real volume() const { return L.x * L.y * L.z; }

 private:
  PAIRMD_HD static Real wrap_component(Real d, Real len) {
    const Real half = Real(0.5) * len;
    if (d > half)
      d -= len;
    else if (d < -half)
      d += len;
    return d;
  }
  PAIRMD_HD static void wrap_coordinate(Real& x, int& image, Real lo, Real len) {
    if (x >= lo + len) {
      x -= len;
      ++image;
    } else if (x < lo) {
      x += len;
      --image;
      // x was a hair below lo and x + len rounded up to lo + len: it is at lo in the old image.
      if (x >= lo + len) {
        x = lo;
        ++image;
      }
    }
  }
};

using Box = BoxGeometry<double>;

}  // namespace pairmd
