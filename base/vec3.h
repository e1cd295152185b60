// A tiny 3-vector used by the physics headers on both backends.
#pragma once

#include <cmath>

#include "base/hd.h"

namespace pairmd {

template <typename Real>
struct Vec3 {
  Real x, y, z;
};

template <typename Real>
PAIRMD_HD Vec3<Real> operator+(Vec3<Real> a, Vec3<Real> b) {
  return {a.x + b.x, a.y + b.y, a.z + b.z};
}
template <typename Real>
PAIRMD_HD Vec3<Real> operator-(Vec3<Real> a, Vec3<Real> b) {
  return {a.x - b.x, a.y - b.y, a.z - b.z};
}
template <typename Real>
PAIRMD_HD Vec3<Real> operator*(Real s, Vec3<Real> a) {
  return {s * a.x, s * a.y, s * a.z};
}
template <typename Real>
PAIRMD_HD Vec3<Real>& operator+=(Vec3<Real>& a, Vec3<Real> b) {
  a.x += b.x;
  a.y += b.y;
  a.z += b.z;
  return a;
}
template <typename Real>
PAIRMD_HD Vec3<Real>& operator-=(Vec3<Real>& a, Vec3<Real> b) {
  a.x -= b.x;
  a.y -= b.y;
  a.z -= b.z;
  return a;
}
template <typename Real>
PAIRMD_HD Real dot(Vec3<Real> a, Vec3<Real> b) {
  return a.x * b.x + a.y * b.y + a.z * b.z;
}

using Vec3d = Vec3<double>;

struct Int3 {
  int x, y, z;
};

}  // namespace pairmd
