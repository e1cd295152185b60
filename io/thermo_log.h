// The thermo table on stdout, its CSV twin, and the progress line on a terminal (on std::clog,
// which PREFIX.log does not copy: a log of carriage returns would be no use).
#pragma once

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/run_observer.h"

namespace pairmd {

// The columns of PREFIX.thermo.csv after the fixed ones: an energy per pair term (energy_lj,
// ...), then the sums per family the force field defines: energy_bond, energy_pair_list,
// energy_angle, energy_dihedral, energy_improper.
struct EnergyColumn {
  std::string name;   // without its unit
  EnergyGroup group;  // the family (EnergyGroup::Pair: one term)
  size_t term = 0;    // the pair term (group Pair)
};
std::vector<EnergyColumn> energy_columns(const ForceField& ff);
// The columns' values from the observables, whose terms are in the order `groups` says.
std::vector<double> energy_column_values(const std::vector<EnergyColumn>& columns,
                                         const std::vector<EnergyGroup>& groups, const Observables& o);

class ThermoLog final : public RunObserver, public ProgressDisplay {
 public:
  // csv_path empty: no CSV. progress: show a live progress line on stderr. `append`: add rows
  // to an existing CSV (a restart); otherwise the CSV is created and must not exist yet.
  // The table goes to `table` (the Python module: the run's log rather than std::cout).
  ThermoLog(const RunConfig& cfg, const std::string& csv_path, bool progress, double dof, bool append,
            std::ostream& table = std::cout);
  ~ThermoLog() override;
  ThermoLog(const ThermoLog&) = delete;
  ThermoLog& operator=(const ThermoLog&) = delete;
  int64_t next_step(int64_t step) const override { return next_multiple(step, every_); }
  void observe(const RunContext& ctx, const Frame& frame) override;
  void finish(const RunContext& ctx, const Frame& frame) override;
  // Called by the run loop after every chunk of steps, to refresh the progress line.
  void progress(const RunContext& ctx, int64_t step) override;

 private:
  double rate(int64_t step);
  void write_row(const std::string& row);
  const RunConfig& cfg_;
  std::ostream& out_;
  int64_t every_;
  bool progress_;
  double dof_;
  std::string csv_path_;
  std::FILE* csv_ = nullptr;
  bool header_printed_ = false;
  bool progress_shown_ = false;
  std::chrono::steady_clock::time_point start_, last_progress_;
  int64_t start_step_ = -1;
  int64_t rate_step_ = 0;
  std::chrono::steady_clock::time_point rate_time_;
  std::vector<EnergyGroup> groups_;  // of the observables' terms (from the run's topology, at the first row)
  double last_rate_ = 0;
  int64_t last_printed_ = -1;
};

std::string format_duration(double seconds);
// The CSV's first line: column names with their units in brackets ("time[fs]", "pressure[atm]").
std::string csv_header(const RunConfig& cfg);

}  // namespace pairmd
