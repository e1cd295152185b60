// Every pair potential and bond: the force equals minus the finite-difference derivative of
// its energy, at random separations.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "potentials/registry.h"

namespace pairmd {
namespace {

// Central difference of V(r) with step h has error ~ h^2 V'''/6; with h = 1e-5 r and V of
// order 1e3 at the closest separations, the truncation error is ~1e-10 relative and rounding
// ~1e-16 * V / h ~ 1e-8 relative at worst; 1e-6 leaves room for both.
constexpr double kRelTol = 1e-6;

template <typename Eval>
void check_pair(const PairCoeffs& c, double rmin, double rmax, double qq) {
  const auto p = Eval::from(c);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> r_dist(rmin, rmax);
  int evaluated = 0;
  for (int k = 0; k < 200; ++k) {
    const double r = r_dist(rng);
    double fdivr, e, ep, em, f1;
    if (!Eval::eval(r * r, qq, p, fdivr, e)) continue;
    const double h = 1e-5 * r;
    ASSERT_TRUE(Eval::eval((r + h) * (r + h), qq, p, f1, ep));
    ASSERT_TRUE(Eval::eval((r - h) * (r - h), qq, p, f1, em));
    const double dvdr = (ep - em) / (2 * h);
    const double force = fdivr * r;  // F_r = -dV/dr
    EXPECT_NEAR(force, -dvdr, kRelTol * std::max(1.0, std::fabs(force))) << Eval::kName << " at r = " << r;
    ++evaluated;
  }
  EXPECT_GT(evaluated, 50) << "too few separations inside the cutoff for " << Eval::kName;
}

TEST(Potentials, LennardJonesForceIsMinusEnergyGradient) {
  PairCoeffs c;
  c.epsilon = 1.3;
  c.sigma = 0.9;
  c.rcut = 2.5;
  check_pair<LennardJones<double>>(c, 0.8, 2.49, 0.0);
  c.shift = true;
  check_pair<LennardJones<double>>(c, 0.8, 2.49, 0.0);
}

TEST(Potentials, WCAIsRepulsiveAndVanishesAtCutoff) {
  PairCoeffs c;
  c.epsilon = 1.0;
  c.sigma = 1.0;
  check_pair<WCA<double>>(c, 0.85, 1.12, 0.0);
  const auto p = WCA<double>::from(c);
  const double rc = std::pow(2.0, 1.0 / 6.0);
  double f, e;
  ASSERT_TRUE(WCA<double>::eval(rc * rc * (1 - 1e-12), 0, p, f, e));
  EXPECT_NEAR(e, 0.0, 1e-9);
  EXPECT_NEAR(f, 0.0, 1e-9);
  EXPECT_FALSE(WCA<double>::eval(rc * rc * (1 + 1e-9), 0, p, f, e));
  ASSERT_TRUE(WCA<double>::eval(0.95 * 0.95, 0, p, f, e));
  EXPECT_GT(f, 0.0);  // repulsive: the force pushes i away from j
}

TEST(Potentials, CoulombForceIsMinusEnergyGradient) {
  PairCoeffs c;
  c.rcut = 4.0;
  c.prefactor = 332.0637;
  check_pair<Coulomb<double>>(c, 0.5, 3.99, -1.0);
  c.shift = true;
  check_pair<Coulomb<double>>(c, 0.5, 3.99, 2.0);
  // Like charges repel.
  double f, e;
  ASSERT_TRUE(Coulomb<double>::eval(1.0, 1.0, Coulomb<double>::from(c), f, e));
  EXPECT_GT(f, 0.0);
}

TEST(Potentials, DebyeHuckelForceIsMinusEnergyGradient) {
  PairCoeffs c;
  c.rcut = 6.0;
  c.kappa = 0.7;
  c.prefactor = 1.0;
  check_pair<DebyeHuckel<double>>(c, 0.5, 5.99, 1.0);
  c.shift = true;
  check_pair<DebyeHuckel<double>>(c, 0.5, 5.99, -3.0);
  double f, e;
  const auto p = DebyeHuckel<double>::from(c);
  ASSERT_TRUE(DebyeHuckel<double>::eval(6.0 * 6.0 * (1 - 1e-12), 1.0, p, f, e));
  EXPECT_NEAR(e, 0.0, 1e-9);  // shifted to zero at the cutoff
}

template <typename Eval>
void check_bond(const BondCoeffs& c, double rmin, double rmax) {
  const auto p = Eval::from(c);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> r_dist(rmin, rmax);
  for (int k = 0; k < 200; ++k) {
    const double r = r_dist(rng);
    const double h = 1e-6 * r;
    double fdivr, e, ep, em, f1;
    ASSERT_TRUE(Eval::eval(r * r, p, fdivr, e));
    ASSERT_TRUE(Eval::eval((r + h) * (r + h), p, f1, ep));
    ASSERT_TRUE(Eval::eval((r - h) * (r - h), p, f1, em));
    const double force = fdivr * r;
    EXPECT_NEAR(force, -(ep - em) / (2 * h), kRelTol * std::max(1.0, std::fabs(force)))
        << Eval::kName << " at r = " << r;
  }
}

TEST(Potentials, HarmonicBondForceIsMinusEnergyGradient) { check_bond<HarmonicBond<double>>({250.0, 1.1}, 0.5, 2.0); }

TEST(Potentials, FeneBondForceIsMinusEnergyGradientAndBreaks) {
  check_bond<FeneBond<double>>({30.0, 1.5}, 0.5, 1.45);
  double f, e;
  EXPECT_FALSE(FeneBond<double>::eval(1.5 * 1.5, FeneBond<double>::from({30.0, 1.5}), f, e));
}

// Every registered potential (potentials/registry.h), with one set of coefficients that suits
// them all: a new potential is checked here as soon as it has its registry line.
TEST(Potentials, EveryRegisteredPairPotentialForceIsMinusEnergyGradient) {
  for (const PairPotentialInfo& info : kPairPotentials) {
    PairCoeffs c;
    c.epsilon = 1.1;
    c.sigma = 0.95;
    c.rcut = 2.5;
    c.kappa = 0.6;
    c.prefactor = 1.7;
    c.ewald_alpha = 0.9;
    for (bool shift : {false, true}) {
      c.shift = shift;
      const double rc = pair_cutoff(info.kind, c);
      SCOPED_TRACE(std::string(info.name) + (shift ? ", shifted" : ""));
      dispatch_pair<double>(
          info.kind, [&](auto eval) { check_pair<decltype(eval)>(c, 0.8, rc - 1e-3, info.charged ? -0.7 : 0.0); });
    }
  }
}

TEST(Potentials, EveryRegisteredBondForceIsMinusEnergyGradient) {
  for (const BondPotentialInfo& info : kBondPotentials) {
    SCOPED_TRACE(info.name);
    dispatch_bond<double>(info.kind, [&](auto eval) { check_bond<decltype(eval)>({30.0, 1.5}, 0.6, 1.45); });
  }
}

}  // namespace
}  // namespace pairmd
