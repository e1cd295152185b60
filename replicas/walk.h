// Each replica's walk through the temperature ladder: the assignment of temperatures to
// replicas at the start and after every exchange, as PREFIX.walk.csv holds it, and the questions
// asked of it: which temperature a replica had at a trajectory frame, which replica had a
// temperature (demultiplexing), and the plot of the walks.
//
// The exchange of step s comes before the observers see step s (velocities already rescaled), so
// a frame at step s belongs to the assignment of the last exchange at or before s (or the start's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pairmd {

struct WalkRow {
  int64_t step = 0;
  int64_t exchange = -1;         // the exchange this assignment is the result of (-1: the start)
  std::vector<int> temperature;  // temperature index of each replica
};

class Walk {
 public:
  void add(WalkRow row) { rows_.push_back(std::move(row)); }
  const std::vector<WalkRow>& rows() const { return rows_; }
  bool empty() const { return rows_.empty(); }
  int replicas() const { return rows_.empty() ? 0 : static_cast<int>(rows_.front().temperature.size()); }

  // The assignment frames at `step` were written under; nullptr before the first row.
  const WalkRow* at_frame(int64_t step) const;
  // The replica that had temperature index `t` at frame step `step` (-1: none known).
  int replica_at(int t, int64_t step) const;

 private:
  std::vector<WalkRow> rows_;
};

// PREFIX.walk.csv: "step,exchange,replica0,replica1,..." then one row per assignment.
std::string walk_csv_header(int replicas);
std::string walk_csv_row(const WalkRow& row);
// Reads a walk CSV; throws std::runtime_error naming the file and line of what is wrong (every
// row must be a permutation of the temperature indices).
Walk read_walk_csv(const std::string& path);

// Checks that a walk read from `path` is one an ensemble writes: exchange counters that follow
// one another, steps that do not go back, and from each row to the next only the swaps the
// exchange could make (pairs (a, a + 1) of exchange_pairs). Throws std::runtime_error naming the
// file and line.
void check_walk_exchanges(const Walk& walk, const std::string& path);

// Rewrites a CSV log of exchanges (its second column is the exchange counter) without the rows
// of exchanges at or after `exchanges` (those not counted by the checkpoint a restart continues
// from). A missing file stays missing. Returns the rows dropped; throws std::runtime_error.
int64_t truncate_exchange_csv(const std::string& path, int64_t exchanges);

// The walk as a plot: each replica's temperature against the step (SVG).
void write_walk_plot(const Walk& walk, const std::vector<double>& temperatures, const std::string& title,
                     const std::string& step_label, const std::string& temperature_label, const std::string& path);

}  // namespace pairmd
