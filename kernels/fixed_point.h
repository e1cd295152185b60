// Fixed-point sums of the deterministic GPU strategies (host and device, so the CPU tests check
// the very conversions the kernels do).
//
// Why: a float sum depends on the order of its terms. The GPU list build claims rows and
// column entries with integer atomics and renumbers the particles into cell order at every
// build, so term orders change from run to run and from build to build. Each per-pair force
// contribution (a float) is therefore converted to an integer number of 2^-32 force units and
// added in 64 bits: integer addition is exact and associative, so the force on a particle is the
// same bits whatever the order of its pairs, the numbering of the particles or the time of the
// list build. The conversion is odd (to_fixed(-x) == -to_fixed(x)), so the force on i and on j
// of a pair cancel exactly and the total force is exactly zero.
//
// Range and resolution: |contribution| < kMaxFixedForce (2^26 ~ 6.7e7) is converted exactly
// down to 2^-32 ~ 2.3e-10 (floats of magnitude >= 2^-9 are exact multiples of 2^-32); a sum of
// 32 such maxima still fits 63 bits. Larger or non-finite contributions are clamped and reported
// (the run stops with a blow-up message), since no sane state has pair forces that large.
//
// Energies and virials use a split form (whole + fraction * 2^-32, two int64 words), exact for
// any float term below 2^62, so a thermo sum over millions of pairs is order-independent too.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/hd.h"

namespace pairmd {

constexpr float kFixedForceScale = 4294967296.0f;       // 2^32 units per force unit
constexpr double kFixedForceUnit = 1.0 / 4294967296.0;  // 2^-32
constexpr float kMaxFixedForce = 67108864.0f;           // 2^26

// Contribution v (a force component) in units of 2^-32, rounded to nearest, ties to even.
// Sets `clamped` when |v| >= kMaxFixedForce or v is not finite (NaN counts as the maximum).
PAIRMD_HD int64_t to_fixed(float v, bool& clamped) {
  if (!(v < kMaxFixedForce && v > -kMaxFixedForce)) {
    clamped = true;
    v = v < 0.f ? -kMaxFixedForce : kMaxFixedForce;
  }
#if defined(__CUDA_ARCH__)
  return __float2ll_rn(v * kFixedForceScale);
#else
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(v) * 4294967296.0));
#endif
}

// The float a fixed-point sum stands for (one rounding, the same on host and device).
PAIRMD_HD float fixed_to_float(int64_t s) { return static_cast<float>(static_cast<double>(s) * kFixedForceUnit); }

struct FixedVec {
  int64_t x = 0, y = 0, z = 0;
};

// acc += s * d (sign +1) or acc -= s * d (sign -1), per component: the product is rounded to
// float first, exactly as a float force vector would be.
PAIRMD_HD void add_scaled(FixedVec& acc, float s, float dx, float dy, float dz, bool& clamped) {
  acc.x += to_fixed(s * dx, clamped);
  acc.y += to_fixed(s * dy, clamped);
  acc.z += to_fixed(s * dz, clamped);
}
PAIRMD_HD void sub_scaled(FixedVec& acc, float s, float dx, float dy, float dz, bool& clamped) {
  acc.x -= to_fixed(s * dx, clamped);
  acc.y -= to_fixed(s * dy, clamped);
  acc.z -= to_fixed(s * dz, clamped);
}

// Split form of an energy-like sum: value = whole + frac * 2^-32. Exact for float terms of
// magnitude below 2^62; `bad` counts terms that are not (non-finite or enormous).
struct SplitSum {
  int64_t whole = 0, frac = 0, bad = 0;
  double value() const { return bad ? NAN : static_cast<double>(whole) + static_cast<double>(frac) * kFixedForceUnit; }
};

PAIRMD_HD void split_add(float term, int64_t& whole, int64_t& frac, int64_t& bad) {
  const double v = term;
  if (!(v < 4.6e18 && v > -4.6e18)) {  // 2^62: also catches NaN
    ++bad;
    return;
  }
#if defined(__CUDA_ARCH__)
  const double w = rint(v);
  whole += __double2ll_rn(w);
  frac += __double2ll_rn((v - w) * 4294967296.0);
#else
  const double w = std::nearbyint(v);
  whole += static_cast<int64_t>(w);
  frac += static_cast<int64_t>(std::nearbyint((v - w) * 4294967296.0));
#endif
}

}  // namespace pairmd
