// The integrators: the one list of their config names and docs lines. The config reader
// (`integrator.kind`), `pairmd check --help`, the docs table (checked by tests/test_registries.cpp)
// and the physics tests read it. The steps themselves are in particle_step.h (begin_step and
// end_step, shared by the CPU reference and the GPU integrate kernels); a new integrator is an
// enumerator in integrator_params.h, its branches there and a line here (docs/extending.md).
#pragma once

#include <string>

#include "integrators/integrator_params.h"

namespace pairmd {

struct IntegratorInfo {
  IntegratorKind kind;
  const char* name;  // the config value of integrator.kind
  bool thermostat;   // samples integrator.temperature (which is then required)
  const char* doc;   // one line
};

inline constexpr IntegratorInfo kIntegrators[] = {
    {IntegratorKind::Langevin, "langevin", true,
     "BAOAB Langevin (Leimkuhler & Matthews): kick, drift, exact OU friction and noise, drift, kick"},
    {IntegratorKind::VelocityVerlet, "nve", false, "velocity Verlet: constant energy"},
    {IntegratorKind::Brownian, "brownian", true,
     "overdamped Brownian: x += dt F / (m gamma) + noise; velocities drawn for reporting"},
};

inline const IntegratorInfo& integrator_info(IntegratorKind k) {
  for (const IntegratorInfo& i : kIntegrators)
    if (i.kind == k) return i;
  return kIntegrators[0];  // not reached: every enumerator has its line
}

inline const char* integrator_kind_name(IntegratorKind k) { return integrator_info(k).name; }

// The registered integrator of that name, or nullptr.
inline const IntegratorInfo* find_integrator(const std::string& name) {
  for (const IntegratorInfo& i : kIntegrators)
    if (name == i.name) return &i;
  return nullptr;
}

}  // namespace pairmd
