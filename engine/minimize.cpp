#include "engine/minimize.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "engine/simulation.h"

namespace pairmd {

namespace {

// A state of the minimisation: positions, and the energy and forces there.
struct Point {
  std::vector<Vec3d> x;
  std::vector<Int3> image;
  std::vector<Vec3d> f;
  double e = 0;
  double e_scale = 0;  // sum of |E| over the terms: what the energy's round-off scales with
  double fmax = 0;     // max_i |F_i|
};

double max_norm(const std::vector<Vec3d>& f) {
  double m = 0;
  for (const Vec3d& v : f) m = std::max(m, dot(v, v));  // NaN never wins: checked separately
  for (const Vec3d& v : f)
    if (!std::isfinite(dot(v, v))) return NAN;
  return std::sqrt(m);
}

// The minimisation in progress: the backend, the rules, the last accepted state and the count.
struct Minimizer {
  Backend& backend;
  const MinimizeSpec& spec;
  const std::function<void(const MinimizeStatus&)>& on_iteration;
  Box box;
  std::vector<double> accel;  // force_to_accel / m per particle: a = accel F
  double round_off = 0;       // relative round-off of the backend's energy
  Point at;                   // the last accepted state
  MinimizeReport report;

  // Moves the backend to p.x and reads the energy and forces there. False (with `why`) when a
  // value is not finite, or a bond broke (SimulationBlowup, thrown on with `rethrow`).
  bool evaluate(Point& p, std::string* why, bool rethrow = false) {
    ++report.evaluations;
    try {
      backend.move_to(p.x, p.image);
    } catch (const SimulationBlowup& e) {
      if (rethrow) throw;
      if (why) *why = e.what();
      return false;
    }
    const Observables o = backend.observables();
    p.e = o.potential;
    p.e_scale = 0;
    for (double t : o.potential_by_term) p.e_scale += std::fabs(t);
    p.e_scale = std::max(p.e_scale, std::fabs(p.e));
    p.f = backend.forces();
    p.fmax = max_norm(p.f);
    return std::isfinite(p.e) && std::isfinite(p.fmax);
  }

  // The rule that ends the minimisation before iteration `k`, if one holds.
  std::optional<MinimizeStop> stop_before(int64_t k) const {
    if (spec.ftol > 0 && at.fmax < spec.ftol) return MinimizeStop::ForceTolerance;
    if (k > spec.max_iterations) return MinimizeStop::MaxIterations;
    if (report.evaluations >= spec.max_evaluations) return MinimizeStop::MaxEvaluations;
    if (g_stop_signal.load() != 0) return MinimizeStop::Interrupted;
    return std::nullopt;
  }

  // etol: the relative change of the energy from `before` to the accepted state.
  bool energy_converged(double before) const {
    return spec.etol > 0 && std::fabs(at.e - before) < spec.etol * 0.5 * (std::fabs(at.e) + std::fabs(before) + 1e-8);
  }

  // at.x + dx, wrapped into the box (images counting the crossings).
  Point displaced(const std::vector<Vec3d>& dx) const {
    Point p;
    p.x = at.x;
    p.image = at.image;
    for (size_t i = 0; i < p.x.size(); ++i) {
      p.x[i] += dx[i];
      box.wrap(p.x[i], p.image[i]);
    }
    return p;
  }

  void show(int64_t k, double dt, bool accepted) const {
    if (!on_iteration) return;
    on_iteration(MinimizeStatus{k, report.evaluations, at.e, at.fmax, dt, accepted});
  }
};

// FIRE's dynamical variables.
struct FireState {
  std::vector<Vec3d> v;
  double dt = 0, alpha = 0;
  double cap = 0;        // the largest move allowed now: max_move, halved after a capped step fails
  int64_t positive = 0;  // consecutive iterations with P = F.v > 0
};

// The start of a FIRE iteration: P = F.v decides whether the step grows (after `delay` positive
// iterations) or the velocity is dropped and the step cut (FIRE 2.0, as LAMMPS; the cut waits
// for the first `delay` iterations).
void fire_adapt(FireState& s, const MinimizeSpec& spec, const Point& at, int64_t k) {
  double power = 0;
  for (size_t i = 0; i < s.v.size(); ++i) power += dot(at.f[i], s.v[i]);
  if (power > 0) {
    if (++s.positive > spec.delay) {
      s.dt = std::min(s.dt * spec.dt_grow, spec.dtmax);
      s.alpha *= spec.alpha_shrink;
    }
    return;
  }
  s.positive = 0;
  if (k > spec.delay) {
    s.dt = std::max(s.dt * spec.dt_shrink, spec.dtmin);
    s.alpha = spec.alpha0;
  }
  std::fill(s.v.begin(), s.v.end(), Vec3d{0, 0, 0});
}

// Semi-implicit Euler with FIRE's mixing v = (1 - alpha) v + alpha |v| F/|F| (when moving
// downhill), capped so that no particle moves more than s.cap. Returns the displacements and
// sets `capped`.
std::vector<Vec3d> fire_move(FireState& s, const Minimizer& m, bool& capped) {
  const std::vector<Vec3d>& f = m.at.f;
  const size_t n = f.size();
  const bool mix = s.positive > 0;
  double vv = 0, ff = 0;
  for (size_t i = 0; i < n; ++i) {
    s.v[i] += (s.dt * m.accel[i]) * f[i];
    vv += dot(s.v[i], s.v[i]);
    ff += dot(f[i], f[i]);
  }
  if (mix && ff > 0) {
    const double a = s.alpha * std::sqrt(vv / ff);
    for (size_t i = 0; i < n; ++i) s.v[i] = (1.0 - s.alpha) * s.v[i] + a * f[i];
  }
  std::vector<Vec3d> dx(n);
  double longest = 0;
  for (size_t i = 0; i < n; ++i) {
    dx[i] = s.dt * s.v[i];
    longest = std::max(longest, dot(dx[i], dx[i]));
  }
  longest = std::sqrt(longest);
  capped = longest > s.cap;
  if (capped) {
    const double scale = s.cap / longest;
    for (size_t i = 0; i < n; ++i) {
      dx[i] = scale * dx[i];
      s.v[i] = scale * s.v[i];
    }
  }
  return dx;
}

// Whether a trial step went uphill, by the energy (beyond the backend's round-off) and by the
// forces: the trapezoid rule's work -(F_old + F_new).dx / 2 estimates the energy change to
// third order in the step. A step is taken back when both say uphill: a potential cut without
// a shift jumps at its cutoff, and a GPU's float energies are noisy near the minimum, where the
// forces still tell the way down.
struct Downhill {
  bool energy_up = false, forces_up = false;
};
Downhill downhill(const Minimizer& m, const Point& trial, const std::vector<Vec3d>& dx) {
  Downhill d;
  d.energy_up = trial.e > m.at.e + m.round_off * std::max(m.at.e_scale, trial.e_scale);
  double work2 = 0;
  for (size_t i = 0; i < dx.size(); ++i) work2 += dot(m.at.f[i] + trial.f[i], dx[i]);
  d.forces_up = work2 < 0;
  return d;
}

void run_fire(Minimizer& m) {
  const MinimizeSpec& spec = m.spec;
  FireState s;
  s.v.assign(m.at.x.size(), Vec3d{0, 0, 0});
  s.dt = spec.dt;
  s.alpha = spec.alpha0;
  s.cap = spec.max_move;
  bool backend_at_best = true;
  for (int64_t k = 1;; ++k) {
    if (const auto stop = m.stop_before(k)) {
      m.report.stop = *stop;
      break;
    }
    fire_adapt(s, spec, m.at, k);
    bool capped = false;
    const double dt_used = s.dt;
    const std::vector<Vec3d> dx = fire_move(s, m, capped);
    Point trial = m.displaced(dx);
    std::string why;
    const bool ok = m.evaluate(trial, &why);
    m.report.iterations = k;
    const Downhill d = ok ? downhill(m, trial, dx) : Downhill{};
    if (!ok || (d.energy_up && d.forces_up)) {
      // Uphill or broken: back to the last accepted state, at rest, with a smaller step.
      backend_at_best = false;
      ++m.report.rejected;
      std::fill(s.v.begin(), s.v.end(), Vec3d{0, 0, 0});
      s.positive = 0;
      s.alpha = spec.alpha0;
      s.dt = std::max(s.dt * spec.dt_shrink, spec.dtmin);
      if (capped) s.cap *= 0.5;
      m.show(k, s.dt, false);
      if (!capped && dt_used <= spec.dtmin) {
        m.report.stop = MinimizeStop::NoProgress;
        m.report.failure = why;
        break;
      }
      continue;
    }
    backend_at_best = true;
    if (d.energy_up) ++m.report.uphill;
    s.cap = spec.max_move;
    const double before = m.at.e;
    m.at = std::move(trial);
    m.show(k, s.dt, true);
    if (s.positive > spec.delay && m.energy_converged(before)) {
      m.report.stop = MinimizeStop::EnergyTolerance;
      break;
    }
  }
  if (!backend_at_best) m.evaluate(m.at, nullptr);  // leave the backend at the best state
}

// The capped steepest descent of system.relax: every step accepted.
void run_steepest_descent(Minimizer& m) {
  for (int64_t k = 1;; ++k) {
    if (const auto stop = m.stop_before(k)) {
      m.report.stop = *stop;
      return;
    }
    if (!(m.at.fmax > 0)) {
      m.report.stop = MinimizeStop::ZeroForce;
      return;
    }
    const double scale = m.spec.max_move / m.at.fmax;
    std::vector<Vec3d> dx(m.at.f.size());
    for (size_t i = 0; i < dx.size(); ++i) dx[i] = scale * m.at.f[i];
    Point next = m.displaced(dx);
    const double before = m.at.e;
    const bool finite = m.evaluate(next, nullptr, true);  // a broken bond ends it, as ever
    m.report.iterations = k;
    m.at = std::move(next);
    m.show(k, 0, true);
    if (!finite) {
      m.report.stop = MinimizeStop::NonFinite;
      return;
    }
    if (m.energy_converged(before)) {
      m.report.stop = MinimizeStop::EnergyTolerance;
      return;
    }
  }
}

}  // namespace

const char* minimize_stop_name(MinimizeStop stop) {
  switch (stop) {
    case MinimizeStop::ForceTolerance:
      return "ftol";
    case MinimizeStop::EnergyTolerance:
      return "etol";
    case MinimizeStop::MaxIterations:
      return "max_iterations";
    case MinimizeStop::MaxEvaluations:
      return "max_evaluations";
    case MinimizeStop::NoProgress:
      return "no progress";
    case MinimizeStop::ZeroForce:
      return "zero force";
    case MinimizeStop::NonFinite:
      return "non-finite energy or force";
    case MinimizeStop::Interrupted:
      return "interrupted";
  }
  return "?";
}

const char* minimize_algorithm_name(MinimizeAlgorithm algorithm) {
  switch (algorithm) {
    case MinimizeAlgorithm::Fire:
      return "fire";
    case MinimizeAlgorithm::SteepestDescent:
      return "steepest_descent";
    case MinimizeAlgorithm::None:
      return "none";
  }
  return "?";
}

MinimizeReport minimize(Backend& backend, const MinimizeSpec& spec, const Units& units,
                        const std::function<void(const MinimizeStatus&)>& on_iteration) {
  if (backend.systems() > 1)
    throw std::invalid_argument("minimize: the backend '" + backend.name() + "' holds " +
                                std::to_string(backend.systems()) +
                                " systems of an ensemble; each is minimised on its own (through its member, "
                                "backends/lockstep_ensemble.h), not their sum with one step and one stopping rule");
  const auto t0 = std::chrono::steady_clock::now();
  SystemState state;
  backend.get_state(state);
  Minimizer m{backend, spec, on_iteration, state.box, {}, 0.0, {}, {}};
  m.report.algorithm = spec.algorithm;
  m.accel.resize(state.size());
  for (size_t i = 0; i < state.size(); ++i) m.accel[i] = units.force_to_accel / state.mass[i];
  // Energies summed in double on the CPU ("cpu", and "cpu ensemble, system k of K" for a system
  // of a CPU ensemble); on a GPU from float terms (kernels/: fixed-point sums of float pair
  // energies at float positions).
  m.round_off = backend.name().compare(0, 3, "cpu") == 0 ? 1e-12 : 1e-6;
  m.at.x = state.position;
  m.at.image = state.image;
  const bool finite = m.evaluate(m.at, &m.report.failure);
  m.report.energy_start = m.at.e;
  m.report.max_force_start = m.at.fmax;
  if (!finite) {
    m.report.stop = MinimizeStop::NonFinite;
  } else if (spec.algorithm == MinimizeAlgorithm::Fire) {
    run_fire(m);
  } else if (spec.algorithm == MinimizeAlgorithm::SteepestDescent) {
    run_steepest_descent(m);
  }
  m.report.energy_end = m.at.e;
  m.report.max_force_end = m.at.fmax;
  m.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m.report;
}

std::string minimize_spec_text(const MinimizeSpec& s) {
  std::ostringstream t;
  t << "{algorithm: " << minimize_algorithm_name(s.algorithm) << ", max_iterations: " << s.max_iterations
    << ", max_move: " << s.max_move << ", ftol: " << s.ftol << ", etol: " << s.etol << "}";
  return t.str();
}

std::string describe_minimization(const MinimizeReport& r, const MinimizeSpec& spec, const Units& u) {
  std::ostringstream s;
  const std::string force_unit = std::string(u.energy_unit()) + "/" + u.length_unit();
  s << "minimize: " << minimize_algorithm_name(r.algorithm) << " stopped by " << minimize_stop_name(r.stop);
  if (r.stop == MinimizeStop::ForceTolerance) s << " (max |F| < " << spec.ftol << ")";
  if (r.stop == MinimizeStop::EnergyTolerance) s << " (relative energy change < " << spec.etol << ")";
  s << " after " << r.iterations << " iterations, " << r.evaluations << " force evaluations";
  if (r.rejected > 0) s << " (" << r.rejected << " steps taken back)";
  if (r.uphill > 0)
    s << " (" << r.uphill
      << " steps kept with the energy up and the forces down: a potential that jumps at its cutoff?)";
  s << " in " << std::setprecision(3) << r.seconds << " s: E " << std::setprecision(8) << r.energy_start << " -> "
    << r.energy_end << " " << u.energy_unit() << ", max |F| " << std::setprecision(4) << r.max_force_start << " -> "
    << r.max_force_end << " " << force_unit;
  if (!r.failure.empty()) s << " (" << r.failure << ")";
  return s.str();
}

void MinimizeProgressLine::operator()(const MinimizeStatus& s) {
  if (!show_) return;
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (last_ >= 0 && now - last_ < 0.5) return;
  last_ = now;
  std::clog << "\r\033[K  minimize: iteration " << s.iteration << "/" << spec_.max_iterations << "  E "
            << std::setprecision(8) << s.energy << "  max|F| " << std::setprecision(3) << s.max_force;
  if (s.dt > 0) std::clog << "  dt " << std::setprecision(3) << s.dt;
  std::clog << std::flush;
  shown_ = true;
}

void MinimizeProgressLine::clear() {
  if (shown_) std::clog << "\r\033[K" << std::flush;
  shown_ = false;
}

}  // namespace pairmd
