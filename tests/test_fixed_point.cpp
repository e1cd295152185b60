// The fixed-point sums of the deterministic GPU strategies (kernels/fixed_point.h), on the CPU:
// exact conversion, odd symmetry (a pair's two contributions cancel exactly), order
// independence, accuracy against a double sum, clamping of huge and non-finite terms, and the
// split energy sums.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/fixed_point.h"

namespace pairmd {
namespace {

TEST(FixedPoint, ConversionIsExactOddAndRoundsBelowTheUnit) {
  bool clamped = false;
  EXPECT_EQ(to_fixed(1.0f, clamped), int64_t{1} << 32);
  EXPECT_EQ(to_fixed(-0.5f, clamped), -(int64_t{1} << 31));
  EXPECT_EQ(to_fixed(0.0f, clamped), 0);
  EXPECT_EQ(to_fixed(-0.0f, clamped), 0);
  // Floats of magnitude >= 2^-9 are exact multiples of 2^-32; below, the nearest multiple.
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  for (int k = 0; k < 100000; ++k) {
    const float v = u(rng) * std::pow(10.f, static_cast<float>(k % 13) - 9.f);
    if (!(std::fabs(v) < kMaxFixedForce)) continue;
    const int64_t f = to_fixed(v, clamped);
    EXPECT_EQ(to_fixed(-v, clamped), -f);
    const double back = static_cast<double>(f) * kFixedForceUnit;
    if (std::fabs(v) >= 1.0f / 512)
      EXPECT_EQ(back, static_cast<double>(v)) << v;
    else
      EXPECT_LE(std::fabs(back - v), 0.5 * kFixedForceUnit) << v;
  }
  EXPECT_FALSE(clamped);
}

TEST(FixedPoint, HugeAndNonFiniteTermsAreClampedAndReported) {
  for (const float v : {kMaxFixedForce, -kMaxFixedForce, 1e30f, std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    bool clamped = false;
    const int64_t f = to_fixed(v, clamped);
    EXPECT_TRUE(clamped) << v;
    EXPECT_EQ(std::llabs(f), static_cast<long long>(kMaxFixedForce * 4294967296.0)) << v;
  }
  // 32 clamped terms of one sign still fit 63 bits: the sum stays ordered, never wraps.
  bool clamped = false;
  int64_t sum = 0;
  for (int k = 0; k < 32; ++k) sum += to_fixed(1e30f, clamped) / 2;
  EXPECT_GT(sum, 0);
}

// A particle's force from ~100 pair contributions in any order: bitwise the same, within the
// fixed-point unit per term of the double sum, and a pair's +f and -f cancel exactly.
TEST(FixedPoint, SumsAreOrderIndependentAccurateAndCancelPairwise) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.f, 1.f);
  std::uniform_real_distribution<float> s(-50.f, 50.f);
  for (int trial = 0; trial < 200; ++trial) {
    struct Term {
      float s, dx, dy, dz;
    };
    std::vector<Term> terms(20 + trial % 100);
    for (auto& t : terms) t = {s(rng), g(rng), g(rng), g(rng)};
    bool clamped = false;
    FixedVec a;
    double ref[3] = {0, 0, 0};
    for (const Term& t : terms) {
      add_scaled(a, t.s, t.dx, t.dy, t.dz, clamped);
      ref[0] += static_cast<double>(t.s * t.dx);
      ref[1] += static_cast<double>(t.s * t.dy);
      ref[2] += static_cast<double>(t.s * t.dz);
    }
    std::shuffle(terms.begin(), terms.end(), rng);
    FixedVec b;
    for (const Term& t : terms) add_scaled(b, t.s, t.dx, t.dy, t.dz, clamped);
    EXPECT_EQ(a.x, b.x);
    EXPECT_EQ(a.y, b.y);
    EXPECT_EQ(a.z, b.z);
    const double tol = terms.size() * kFixedForceUnit;
    EXPECT_NEAR(static_cast<double>(a.x) * kFixedForceUnit, ref[0], tol);
    EXPECT_NEAR(static_cast<double>(a.y) * kFixedForceUnit, ref[1], tol);
    EXPECT_NEAR(static_cast<double>(a.z) * kFixedForceUnit, ref[2], tol);
    // The force as a float: one rounding of the exact sum.
    EXPECT_EQ(fixed_to_float(a.x), static_cast<float>(static_cast<double>(a.x) * kFixedForceUnit));
    for (const Term& t : terms) sub_scaled(b, t.s, t.dx, t.dy, t.dz, clamped);
    EXPECT_EQ(b.x, 0);
    EXPECT_EQ(b.y, 0);
    EXPECT_EQ(b.z, 0);
    EXPECT_FALSE(clamped);
  }
}

TEST(FixedPoint, SplitSumsAreExactAndOrderIndependent) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v;
  for (int k = 0; k < 100000; ++k) v.push_back(u(rng) * std::pow(10.f, static_cast<float>(k % 9) - 3.f));
  SplitSum a, b;
  for (float x : v) split_add(x, a.whole, a.frac, a.bad);
  std::shuffle(v.begin(), v.end(), rng);
  for (float x : v) split_add(x, b.whole, b.frac, b.bad);
  EXPECT_EQ(a.whole, b.whole);
  EXPECT_EQ(a.frac, b.frac);
  // Against a compensated double sum: the rounding below 2^-32 per term is all that is lost.
  long double exact = 0;
  for (float x : v) exact += x;
  EXPECT_NEAR(a.value(), static_cast<double>(exact), v.size() * kFixedForceUnit);
  // Terms past 2^62, and non-finite ones, make the sum NaN (reported as such), not garbage.
  SplitSum c;
  split_add(1.0f, c.whole, c.frac, c.bad);
  split_add(std::numeric_limits<float>::infinity(), c.whole, c.frac, c.bad);
  EXPECT_TRUE(std::isnan(c.value()));
  SplitSum d;
  split_add(1e20f, d.whole, d.frac, d.bad);
  EXPECT_TRUE(std::isnan(d.value()));
  SplitSum e;
  split_add(3e18f, e.whole, e.frac, e.bad);
  split_add(-3e18f, e.whole, e.frac, e.bad);
  EXPECT_EQ(e.value(), 0.0);
}

}  // namespace
}  // namespace pairmd
