// Energy minimisation of a backend's particles (the `minimize` section, docs/minimize.md):
//
// - FIRE, the fast inertial relaxation engine (Bitzek et al., PRL 97, 170201 (2006)) in its
//   FIRE 2.0 form (Guenole et al., Comput. Mater. Sci. 175, 109584 (2020); LAMMPS's
//   `min_style fire`): damped dynamics whose velocity is mixed towards the force, with a time
//   step that grows while the power P = F.v stays positive and is cut, with the velocity set to
//   zero, when it is not. Two safeguards for starts that overlap: no particle moves more than
//   max_move in one iteration, and a trial step that goes uphill (or breaks a bond) is taken
//   back (a downhill check, as ASE's FIRE has one) and retried from the last accepted state at
//   rest with a smaller time step. Uphill means: the energy rose beyond the backend's round-off
//   and the forces agree (the work they did along the step, by the trapezoid rule, is negative);
//   so the energy of a smooth potential never rises across accepted steps, while the jump of a
//   potential cut without a shift, or a GPU's float noise in the energy, does not stall it.
// - steepest_descent: the capped steepest descent of system.relax: each iteration moves every
//   particle along its force, scaled so that the largest move is max_move (accepted whatever the
//   energy does).
//
// It drives the backend through move_to(), observables() and forces() only, so it runs on the
// CPU reference and on the GPU alike; the minimiser's own vectors live on the host.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "backends/backend.h"
#include "engine/config.h"

namespace pairmd {

// What ended a minimisation.
enum class MinimizeStop {
  ForceTolerance,   // max |F_i| < ftol
  EnergyTolerance,  // |E_k - E_k-1| < etol (|E_k| + |E_k-1|) / 2
  MaxIterations,
  MaxEvaluations,
  NoProgress,  // FIRE at dtmin and no step lowers the energy beyond round-off (a precision floor)
  ZeroForce,   // every force is exactly 0 (steepest descent has no direction)
  NonFinite,   // the start has a non-finite energy or force: nothing was moved
  Interrupted  // SIGINT / SIGTERM (g_stop_signal)
};
const char* minimize_stop_name(MinimizeStop stop);
const char* minimize_algorithm_name(MinimizeAlgorithm algorithm);

// The state of the minimisation after an iteration, for a progress line and tests.
struct MinimizeStatus {
  int64_t iteration = 0;
  int64_t evaluations = 0;
  double energy = 0;     // potential energy of the last accepted state
  double max_force = 0;  // max_i |F_i| there
  double dt = 0;         // FIRE's time step (0 for steepest descent)
  bool accepted = true;  // this iteration's step was accepted
};

struct MinimizeReport {
  MinimizeAlgorithm algorithm = MinimizeAlgorithm::None;
  MinimizeStop stop = MinimizeStop::MaxIterations;
  int64_t iterations = 0;
  int64_t evaluations = 0;  // force evaluations (move_to or the backend's first), the start's included
  int64_t rejected = 0;     // FIRE's trial steps taken back (uphill, or a bond broken)
  int64_t uphill = 0;       // FIRE's steps kept although the energy rose: the forces said downhill
  double energy_start = 0, energy_end = 0;
  double max_force_start = 0, max_force_end = 0;
  double seconds = 0;
  std::string failure;  // NoProgress / NonFinite: what the backend said, if it threw
};

// Minimises the potential energy of the backend's particles from their current positions; the
// backend is left at the lowest-energy state accepted (steepest descent: the last one), with
// velocities and step as they were. `on_iteration` (may be empty) is called after every
// iteration. Stops on the first rule of `spec` that holds, or on a stop signal (g_stop_signal).
// A backend of several systems (Backend::systems()) is refused (std::invalid_argument): an
// ensemble's systems are minimised one by one, each through its member.
MinimizeReport minimize(Backend& backend, const MinimizeSpec& spec, const Units& units,
                        const std::function<void(const MinimizeStatus&)>& on_iteration = {});

// One line for the log: the algorithm, the rule that stopped it, iterations, evaluations, E and
// max |F| before and after, with units.
std::string describe_minimization(const MinimizeReport& r, const MinimizeSpec& spec, const Units& units);

// How a config's minimisation is spelled as `minimize` keys (for the note that system.relax is
// an alias): "{algorithm: steepest_descent, max_iterations: 2000, max_move: 0.01, ftol: 0, etol: 0}".
std::string minimize_spec_text(const MinimizeSpec& spec);

// The progress line of a minimisation on std::clog (as the run's): iteration, E, max |F|, at most
// twice a second; clear() removes it before other text is printed.
class MinimizeProgressLine {
 public:
  MinimizeProgressLine(const MinimizeSpec& spec, bool show) : spec_(spec), show_(show) {}
  ~MinimizeProgressLine() { clear(); }
  void operator()(const MinimizeStatus& s);
  void clear();

 private:
  const MinimizeSpec& spec_;
  bool show_;
  bool shown_ = false;
  double last_ = -1;
};

}  // namespace pairmd
