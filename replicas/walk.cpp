#include "replicas/walk.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/text.h"
#include "io/csv_rows.h"
#include "io/svg_plot.h"
#include "replicas/exchange.h"

namespace pairmd {

const WalkRow* Walk::at_frame(int64_t step) const {
  const WalkRow* found = nullptr;
  for (const WalkRow& r : rows_) {
    // Each assignment holds from its step on (the frame of an exchange's step is written after it).
    if (r.step <= step)
      found = &r;
    else
      break;
  }
  return found;
}

int Walk::replica_at(int t, int64_t step) const {
  const WalkRow* row = at_frame(step);
  if (!row) return -1;
  for (size_t r = 0; r < row->temperature.size(); ++r)
    if (row->temperature[r] == t) return static_cast<int>(r);
  return -1;
}

std::string walk_csv_header(int replicas) {
  std::string h = "step,exchange";
  for (int r = 0; r < replicas; ++r) h += ",replica" + std::to_string(r);
  return h;
}

std::string walk_csv_row(const WalkRow& row) {
  std::string s = std::to_string(row.step) + "," + std::to_string(row.exchange);
  for (int t : row.temperature) s += "," + std::to_string(t);
  return s;
}

Walk read_walk_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open the walk '" + path + "'");
  std::string line;
  int number = 0;
  auto fail = [&](const std::string& what) {
    return std::runtime_error(path + ":" + std::to_string(number) + ": " + what);
  };
  Walk w;
  size_t columns = 0;
  while (std::getline(in, line)) {
    ++number;
    drop_cr(line);
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    if (number == 1) {
      if (cells.size() < 3 || cells[0] != "step" || cells[1] != "exchange")
        throw fail("not a walk (header '" + line + "')");
      columns = cells.size();
      continue;
    }
    if (cells.size() != columns) throw fail("expected " + std::to_string(columns) + " columns");
    WalkRow r;
    std::vector<long long> v;
    for (const std::string& c : cells) {
      char* end = nullptr;
      v.push_back(std::strtoll(c.c_str(), &end, 10));
      if (end == c.c_str() || *end) throw fail("'" + c + "' is not an integer");
    }
    r.step = v[0];
    r.exchange = v[1];
    std::vector<bool> taken(columns - 2, false);
    for (size_t k = 2; k < v.size(); ++k) {
      if (v[k] < 0 || v[k] >= static_cast<long long>(columns - 2)) throw fail("temperature index out of range");
      if (taken[static_cast<size_t>(v[k])])
        throw fail("not a permutation of the temperature indices 0.." + std::to_string(columns - 3) +
                   " (two replicas at temperature index " + std::to_string(v[k]) + ")");
      taken[static_cast<size_t>(v[k])] = true;
      r.temperature.push_back(static_cast<int>(v[k]));
    }
    w.add(std::move(r));
  }
  if (number == 0) throw std::runtime_error("the walk '" + path + "' is empty");
  return w;
}

void check_walk_exchanges(const Walk& walk, const std::string& path) {
  const std::vector<WalkRow>& rows = walk.rows();
  const int k = walk.replicas();
  for (size_t i = 1; i < rows.size(); ++i) {
    const WalkRow &a = rows[i - 1], &b = rows[i];
    auto fail = [&](const std::string& what) {
      return std::runtime_error(path + ":" + std::to_string(i + 2) + ": " + what);
    };
    if (b.exchange != a.exchange + 1)
      throw fail("exchange " + std::to_string(b.exchange) + " follows exchange " + std::to_string(a.exchange) +
                 " (rows missing or out of order)");
    if (b.step < a.step) throw fail("step " + std::to_string(b.step) + " comes after step " + std::to_string(a.step));
    const std::vector<int> pairs = exchange_pairs(b.exchange, k);
    for (int r = 0; r < k; ++r) {
      const int from = a.temperature[r], to = b.temperature[r];
      const int low = std::min(from, to);
      if (from != to && (std::abs(from - to) != 1 || std::find(pairs.begin(), pairs.end(), low) == pairs.end()))
        throw fail("replica " + std::to_string(r) + " goes from temperature index " + std::to_string(from) + " to " +
                   std::to_string(to) + ", which exchange " + std::to_string(b.exchange) + " cannot do");
    }
  }
}

int64_t truncate_exchange_csv(const std::string& path, int64_t exchanges) {
  return drop_csv_rows(path, [exchanges](const std::string& row) {
    const size_t comma = row.find(',');
    char* end = nullptr;
    const char* second = comma == std::string::npos ? "" : row.c_str() + comma + 1;
    const long long n = std::strtoll(second, &end, 10);
    // A row cut short by a kill has no counter: it goes too.
    return end == second || n >= exchanges ? RowFate::Drop : RowFate::Keep;
  });
}

void write_walk_plot(const Walk& walk, const std::vector<double>& temperatures, const std::string& title,
                     const std::string& step_label, const std::string& temperature_label, const std::string& path) {
  SvgPlot plot(title, step_label, temperature_label);
  plot.set_linear(true);
  plot.set_markers(false);
  const int k = walk.replicas();
  for (int r = 0; r < k; ++r) {
    // A staircase: each temperature holds until the next exchange.
    std::vector<std::pair<double, double>> pts;
    for (const WalkRow& row : walk.rows()) {
      const double t = temperatures.at(static_cast<size_t>(row.temperature[r]));
      if (!pts.empty()) pts.push_back({static_cast<double>(row.step), pts.back().second});
      pts.push_back({static_cast<double>(row.step), t});
    }
    plot.add_series("replica " + std::to_string(r), pts);
  }
  plot.write(path);
}

}  // namespace pairmd
