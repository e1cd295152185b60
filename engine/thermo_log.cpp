#include "engine/thermo_log.h"

#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace pairmd {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = std::lround(seconds);
  std::ostringstream o;
  if (s >= 3600) o << s / 3600 << ":" << std::setw(2) << std::setfill('0') << (s / 60) % 60 << ":" << std::setw(2) << s % 60;
  else o << (s / 60) << ":" << std::setw(2) << std::setfill('0') << s % 60;
  return o.str();
}

ThermoLog::ThermoLog(const RunConfig& cfg, const std::string& csv_path, bool progress, double dof, bool append)
    : cfg_(cfg), every_(cfg.output.thermo_every), progress_(progress), dof_(dof) {
  if (!csv_path.empty()) {
    csv_.open(csv_path, append ? std::ios::app : std::ios::trunc);
    if (!csv_) throw std::runtime_error("cannot write the thermo CSV '" + csv_path + "'");
    if (!append) {
      csv_ << "step,time,temperature,potential_energy,kinetic_energy,total_energy,pressure,steps_per_second";
      for (const PairTerm& t : cfg.model.force_field.pair_terms) csv_ << ",energy_" << pair_kind_name(t.kind);
      csv_ << "\n";
    }
  }
  start_ = last_progress_ = rate_time_ = std::chrono::steady_clock::now();
}

double ThermoLog::rate(int64_t step) {
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - rate_time_).count();
  if (dt > 0 && step > rate_step_) last_rate_ = (step - rate_step_) / dt;
  rate_step_ = step;
  rate_time_ = now;
  return last_rate_;
}

void ThermoLog::observe(const RunContext& ctx, const Frame& frame) {
  const Observables& o = frame.observables;
  const int64_t step = frame.state.step;
  last_printed_ = step;
  if (start_step_ < 0) {
    start_step_ = rate_step_ = step;
    start_ = rate_time_ = std::chrono::steady_clock::now();
  }
  const double T = temperature(o, dof_, cfg_.model.units.kB);
  const double P = pressure(o, frame.state.box.periodic ? frame.state.box.volume() : 0.0);
  const double sps = step > start_step_ ? rate(step) : 0.0;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double avg = step > start_step_ ? (step - start_step_) / elapsed : 0.0;
  const double eta = avg > 0 ? (ctx.last_step - step) / avg : NAN;

  if (progress_shown_) {
    std::cerr << "\r\033[K" << std::flush;
    progress_shown_ = false;
  }
  if (!header_printed_) {
    std::cout << std::setw(10) << "step" << std::setw(12) << "time" << std::setw(10) << "T" << std::setw(14) << "PE"
              << std::setw(14) << "KE" << std::setw(14) << "E_total" << std::setw(12) << "P" << std::setw(11)
              << "steps/s" << std::setw(10) << "ETA" << "\n";
    header_printed_ = true;
  }
  std::cout << std::setw(10) << step << std::setw(12) << std::setprecision(5) << frame.time << std::setw(10)
            << std::fixed << std::setprecision(4) << T << std::setw(14) << std::setprecision(4) << o.potential
            << std::setw(14) << o.kinetic << std::setw(14) << o.total() << std::setw(12) << P
            << std::defaultfloat << std::setw(11) << std::setprecision(4) << sps << std::setw(10)
            << (step > start_step_ ? format_duration(eta) : "") << "\n";
  std::cout.unsetf(std::ios::floatfield);
  std::cout << std::flush;
  if (csv_) {
    csv_ << step << "," << std::setprecision(10) << frame.time << "," << T << "," << std::setprecision(15) << o.potential
         << "," << o.kinetic << "," << o.total() << "," << std::setprecision(10) << P << "," << sps;
    for (size_t t = 0; t < cfg_.model.force_field.pair_terms.size() && t < o.potential_by_term.size(); ++t)
      csv_ << "," << std::setprecision(15) << o.potential_by_term[t];
    csv_ << "\n";
    csv_.flush();
  }
}

void ThermoLog::progress(const RunContext& ctx, int64_t step) {
  if (!progress_) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_progress_).count() < 0.5) return;
  last_progress_ = now;
  if (start_step_ < 0) return;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double avg = step > start_step_ ? (step - start_step_) / elapsed : 0.0;
  const double total = static_cast<double>(ctx.last_step - ctx.first_step);
  const double done = total > 0 ? 100.0 * (step - ctx.first_step) / total : 100.0;
  std::cerr << "\r\033[K  step " << step << "/" << ctx.last_step << "  " << std::fixed << std::setprecision(1) << done
            << "%  " << std::defaultfloat << std::setprecision(4) << avg << " steps/s  ETA "
            << format_duration(avg > 0 ? (ctx.last_step - step) / avg : NAN) << std::flush;
  progress_shown_ = true;
}

void ThermoLog::finish(const RunContext& ctx, const Frame& frame) {
  if (progress_shown_) std::cerr << "\r\033[K" << std::flush;
  progress_shown_ = false;
  if (frame.state.step != last_printed_) observe(ctx, frame);  // always end on the last state
  if (csv_) csv_.flush();
}

}  // namespace pairmd
