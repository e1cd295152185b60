#include "io/thermo_log.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace pairmd {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = std::lround(seconds);
  std::ostringstream o;
  if (s >= 3600)
    o << s / 3600 << ":" << std::setw(2) << std::setfill('0') << (s / 60) % 60 << ":" << std::setw(2) << s % 60;
  else
    o << (s / 60) << ":" << std::setw(2) << std::setfill('0') << s % 60;
  return o.str();
}

std::vector<EnergyColumn> energy_columns(const ForceField& ff) {
  std::vector<EnergyColumn> c;
  for (size_t t = 0; t < ff.pair_terms.size(); ++t)
    c.push_back({std::string("energy_") + pair_kind_name(ff.pair_terms[t].kind), EnergyGroup::Pair, t});
  if (!ff.bond_types.empty()) c.push_back({"energy_bond", EnergyGroup::Bond});
  if (!ff.pair_lists.empty()) c.push_back({"energy_pair_list", EnergyGroup::PairList});
  if (!ff.angle_types.empty()) c.push_back({"energy_angle", EnergyGroup::Angle});
  if (!ff.dihedral_types.empty()) c.push_back({"energy_dihedral", EnergyGroup::Dihedral});
  if (!ff.improper_types.empty()) c.push_back({"energy_improper", EnergyGroup::Improper});
  return c;
}

std::vector<double> energy_column_values(const std::vector<EnergyColumn>& columns,
                                         const std::vector<EnergyGroup>& groups, const Observables& o) {
  std::vector<double> v;
  for (const EnergyColumn& c : columns) {
    double sum = 0.0;
    if (c.group == EnergyGroup::Pair) {
      sum = c.term < o.potential_by_term.size() ? o.potential_by_term[c.term] : NAN;
    } else {
      for (size_t k = 0; k < groups.size() && k < o.potential_by_term.size(); ++k)
        if (groups[k] == c.group) sum += o.potential_by_term[k];
    }
    v.push_back(sum);
  }
  return v;
}

namespace {

// A number of the thermo table: `decimals` decimals, or %g's exponent form where they would run
// past its column (1e+300 is not printed as 300 digits).
std::string table_number(double v, int decimals = 4) {
  char buf[64];
  if (std::fabs(v) < 1e8)
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string csv_header(const RunConfig& cfg) {
  const Units& u = cfg.model.units;
  auto col = [](const char* name, const char* unit) { return std::string(name) + "[" + unit + "]"; };
  std::string h = "step," + col("time", u.time_unit()) + "," + col("temperature", u.temperature_unit()) + "," +
                  col("potential_energy", u.energy_unit()) + "," + col("kinetic_energy", u.energy_unit()) + "," +
                  col("total_energy", u.energy_unit()) + "," + col("pressure", u.pressure_unit()) + "," +
                  col("volume", (std::string(u.length_unit()) + "^3").c_str()) + "," +
                  col("density", (std::string("1/") + u.length_unit() + "^3").c_str()) + ",steps_per_second";
  for (const EnergyColumn& c : energy_columns(cfg.model.force_field)) h += "," + col(c.name.c_str(), u.energy_unit());
  return h;
}

ThermoLog::ThermoLog(const RunConfig& cfg, const std::string& csv_path, bool progress, double dof, bool append,
                     std::ostream& table)
    : cfg_(cfg), out_(table), every_(cfg.output.thermo_every), progress_(progress), dof_(dof), csv_path_(csv_path) {
  if (!csv_path.empty()) {
    // "x": created here or not at all; an existing file is never truncated.
    csv_ = std::fopen(csv_path.c_str(), append ? "a" : "wx");
    if (!csv_) throw std::runtime_error("cannot write the thermo CSV '" + csv_path + "': " + std::strerror(errno));
    if (!append) {
      write_row(csv_header(cfg) + "\n");
    }
  }
  start_ = last_progress_ = rate_time_ = std::chrono::steady_clock::now();
}

ThermoLog::~ThermoLog() {
  if (csv_) std::fclose(csv_);
}

// Rows go out whole and at once (a reader, or a run killed next, sees only complete rows up to
// the last one written); a failed write is an error of the run, not a silently short table.
void ThermoLog::write_row(const std::string& row) {
  if (!csv_) return;
  if (std::fwrite(row.data(), 1, row.size(), csv_) != row.size() || std::fflush(csv_) != 0) {
    const std::string why = std::strerror(errno);
    std::fclose(csv_);
    csv_ = nullptr;
    throw std::runtime_error("writing the thermo CSV '" + csv_path_ + "' failed: " + why);
  }
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
  // Open boundaries have no volume: V, density and pressure read nan.
  const double V = frame.state.box.periodic ? frame.state.box.volume() : NAN;
  const double P = cfg_.model.units.pressure_out * pressure(o, frame.state.box.periodic ? V : 0.0);
  const double rho = static_cast<double>(frame.state.size()) / V;
  const double sps = step > start_step_ ? rate(step) : 0.0;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double avg = step > start_step_ ? (step - start_step_) / elapsed : 0.0;
  const double eta = avg > 0 ? (ctx.last_step - step) / avg : NAN;

  if (progress_shown_) {
    std::clog << "\r\033[K" << std::flush;
    progress_shown_ = false;
  }
  if (!header_printed_) {
    // Names, then their units: every number of the table says what it is measured in.
    const Units& u = cfg_.model.units;
    auto in = [](const char* unit) { return "[" + std::string(unit) + "]"; };
    const bool lj = u.reduced();
    out_ << std::setw(10) << "step" << std::setw(12) << "time" << std::setw(10) << "T" << std::setw(14) << "PE"
         << std::setw(14) << "KE" << std::setw(14) << "E_total" << std::setw(12) << "P" << std::setw(13) << "V"
         << std::setw(9) << "rho" << std::setw(11) << "steps/s" << std::setw(10) << "ETA"
         << "\n"
         << std::setw(10) << "" << std::setw(12) << in(u.time_unit()) << std::setw(10)
         << in(lj ? "eps/k_B" : u.temperature_unit()) << std::setw(14) << in(u.energy_unit()) << std::setw(14)
         << in(u.energy_unit()) << std::setw(14) << in(u.energy_unit()) << std::setw(12)
         << in(lj ? "eps/sig^3" : u.pressure_unit()) << std::setw(13) << in(lj ? "sig^3" : "A^3") << std::setw(9)
         << in(lj ? "sig^-3" : "A^-3") << std::setw(11) << "" << std::setw(10) << "[h:m:s]"
         << "\n";
    header_printed_ = true;
  }
  out_ << std::setw(10) << step << std::setw(12) << std::setprecision(5) << frame.time << std::setw(10)
       << table_number(T) << std::setw(14) << table_number(o.potential) << std::setw(14) << table_number(o.kinetic)
       << std::setw(14) << table_number(o.total()) << std::setw(12) << table_number(P) << std::setw(13)
       << table_number(V, 2) << std::setw(9) << table_number(rho) << std::setw(11) << std::setprecision(4) << sps
       << std::setw(10) << (step > start_step_ ? format_duration(eta) : "") << "\n";
  out_ << std::flush;
  if (csv_) {
    std::ostringstream row;
    row << step << "," << std::setprecision(10) << frame.time << "," << T << "," << std::setprecision(15) << o.potential
        << "," << o.kinetic << "," << o.total() << "," << std::setprecision(10) << P << "," << std::setprecision(15)
        << V << "," << rho << "," << sps;
    if (groups_.empty()) {
      Model m = cfg_.model;
      m.topology = ctx.topology;
      groups_ = energy_groups(m);
    }
    for (double e : energy_column_values(energy_columns(cfg_.model.force_field), groups_, o))
      row << "," << std::setprecision(15) << e;
    row << "\n";
    write_row(row.str());
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
  std::clog << "\r\033[K  step " << step << "/" << ctx.last_step << "  " << std::fixed << std::setprecision(1) << done
            << "%  " << std::defaultfloat << std::setprecision(4) << avg << " steps/s  ETA "
            << format_duration(avg > 0 ? (ctx.last_step - step) / avg : NAN) << std::flush;
  progress_shown_ = true;
}

void ThermoLog::finish(const RunContext& ctx, const Frame& frame) {
  if (progress_shown_) std::clog << "\r\033[K" << std::flush;
  progress_shown_ = false;
  if (frame.state.step != last_printed_) observe(ctx, frame);  // always end on the last state
  if (csv_ && std::fclose(csv_) != 0) {
    csv_ = nullptr;
    throw std::runtime_error("closing the thermo CSV '" + csv_path_ + "' failed: " + std::strerror(errno));
  }
  csv_ = nullptr;
}

}  // namespace pairmd
