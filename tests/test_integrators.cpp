// Thermostat noise is a function of (seed, step, particle tag, stream) only. (Seeds, the noise of
// free particles and continuations run on every backend: tests/test_physics.cpp.)
#include <gtest/gtest.h>

#include <cstring>

#include "integrators/noise.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

// The noise is a pure function of (seed, step, tag, stream): the same draws in any order, and
// different draws when any of them changes.
TEST(Integrators, NoiseIsAFunctionOfSeedStepTag) {
  const Vec3d a = gaussian3<double>(7, 100, 5, kNoiseThermostat);
  for (uint32_t tag = 0; tag < 10; ++tag) gaussian3<double>(7, 100, tag, kNoiseThermostat);  // other draws between
  const Vec3d b = gaussian3<double>(7, 100, 5, kNoiseThermostat);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
  for (const Vec3d& other :
       {gaussian3<double>(8, 100, 5, kNoiseThermostat), gaussian3<double>(7, 101, 5, kNoiseThermostat),
        gaussian3<double>(7, 100, 6, kNoiseThermostat), gaussian3<double>(7, 100, 5, kNoiseVelocities),
        gaussian3<double>(7, 100 + (uint64_t(1) << 32), 5, kNoiseThermostat)})
    EXPECT_NE(std::memcmp(&a, &other, sizeof a), 0);
}

}  // namespace
}  // namespace pairmd
