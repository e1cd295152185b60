// rsqrt_fma (kernels/dcs/soft_rsqrt.h), the reciprocal square root of the DCS kernel variant that
// runs a share of its rsqrts on the FMA pipes: checked on the host on every float of one exponent
// period. The bound is what the header derives (+-3.2e-7 in exact arithmetic, plus the float
// rounding of the 8 FP32 operations), with a margin of ~10 %: |error| < 5.3e-7, RMS < 2.6e-7 and
// an unbiased mean (|mean| < 1e-8), so that summing many terms does not drift.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>

#include "kernels/dcs/soft_rsqrt.h"

namespace pairmd {
namespace {

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

TEST(SoftRsqrt, RelativeErrorOnEveryFloatOfOneExponentPeriod) {
  // x in [1, 4): the guess depends on the exponent only through its parity, so every other
  // normal x is one of these times a power of 4, which scales the result exactly.
  std::uint32_t lo, hi;
  const float one = 1.0f, four = 4.0f;
  std::memcpy(&lo, &one, sizeof lo);
  std::memcpy(&hi, &four, sizeof hi);
  double emax = 0, se = 0, sum = 0;
  for (std::uint32_t b = lo; b < hi; ++b) {
    const float x = from_bits(b);
    const double e = static_cast<double>(dcs::rsqrt_fma(x)) * std::sqrt(static_cast<double>(x)) - 1.0;
    emax = std::max(emax, std::fabs(e));
    se += e * e;
    sum += e;
  }
  const double n = hi - lo;
  std::printf("  rsqrt_fma on [1, 4): max |rel error| %.3e, RMS %.3e, mean %.2e\n", emax, std::sqrt(se / n), sum / n);
  EXPECT_LT(emax, 5.3e-7);
  EXPECT_LT(std::sqrt(se / n), 2.6e-7);
  EXPECT_LT(std::fabs(sum / n), 1e-8);
}

TEST(SoftRsqrt, ScalesOverTheRangeOfSquaredDistances) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> expo(-20, 40);
  for (int t = 0; t < 100000; ++t) {
    const float x = static_cast<float>(std::exp2(expo(rng)));
    const double e = static_cast<double>(dcs::rsqrt_fma(x)) * std::sqrt(static_cast<double>(x)) - 1.0;
    ASSERT_LT(std::fabs(e), 5.3e-7) << x;
  }
}

}  // namespace
}  // namespace pairmd
