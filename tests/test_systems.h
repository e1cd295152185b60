// Small versions of the example systems, built from inline configs, for tests that compare
// backends and strategies on realistic configurations.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/system_builder.h"

namespace pairmd::testing {

inline const char* kLjLiquid = R"(
units: lj
system:
  types: [{name: A, mass: 1.0}]
  lattice: {kind: fcc, cells: 6, density: 0.8442}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 11}
neighbor: {skin: 0.3}
)";

inline const char* kKremerGrest = R"(
units: lj
system:
  types: [{name: M, mass: 1.0}]
  chains: {count: 20, length: 25, density: 0.85, bond: fene, seed: 3}
force_field:
  exclusions: none
  bonds: [{name: fene, potential: fene, k: 30.0, r0: 1.5}]
  pair:
    - potential: wca
      coeffs: [{types: [M, M], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.01, temperature: 1.0, friction: 0.5, seed: 5}
neighbor: {skin: 0.4}
)";

inline const char* kPolyelectrolyte = R"(
units: lj
system:
  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 1.0, charge: 1.0}]
  chains: {count: 8, length: 20, density: 0.05, bond: spring, monomer_type: M, charged_every: 2, counterion_type: C, seed: 9}
force_field:
  exclusions: bonds
  bonds: [{name: spring, potential: harmonic, k: 100.0, r0: 1.0}]
  pair:
    - potential: wca
      mixing: geometric
      coeffs: [{type: M, epsilon: 1.0, sigma: 1.0}, {type: C, epsilon: 1.0, sigma: 1.0}]
    - potential: debye_huckel
      cutoff: 6.0
      bjerrum_length: 2.0
      debye_length: 3.0
      shift: true
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, friction: 1.0, seed: 21}
neighbor: {skin: 0.4}
)";

struct TestSystem {
  std::string name;
  RunConfig config;
  BuiltSystem system;
  Model model() const {
    Model m = config.model;
    m.topology = system.topology;
    return m;
  }
};

inline TestSystem make_system(const std::string& name, const char* yaml, const std::vector<std::string>& sets = {}) {
  TestSystem t;
  t.name = name;
  t.config = parse_config(yaml, name + ".yaml", sets);
  t.system = build_system(t.config);
  return t;
}

inline std::vector<TestSystem> example_systems() {
  return {make_system("lj_liquid", kLjLiquid), make_system("kremer_grest", kKremerGrest),
          make_system("polyelectrolyte", kPolyelectrolyte)};
}

// Random displacements of up to `amount` in each direction, wrapped back into the box: a
// "random configuration" near the system's own structure (no overlaps that blow up).
inline void jiggle(SystemState& s, double amount, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-amount, amount);
  for (size_t i = 0; i < s.size(); ++i) {
    s.position[i] += Vec3d{u(rng), u(rng), u(rng)};
    s.box.wrap(s.position[i], s.image[i]);
  }
}

}  // namespace pairmd::testing
