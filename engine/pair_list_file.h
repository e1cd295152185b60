// The text table of a pair list (force_field.pair_lists[k].file): one pair per line,
//
//   # comment
//   i j v1 v2 ...        (whitespace or commas between the numbers)
//
// i and j are particle indices (0-based, the order of the system's particles), then one number
// per column of the pair list (`columns`, e.g. r0). `pairmd sop-build` writes such files.
#pragma once

#include <string>
#include <vector>

#include "base/topology.h"

namespace pairmd {

struct PairTable {
  std::vector<Bond> pairs;     // type = the pair's index
  std::vector<double> values;  // ncolumns per pair
  std::vector<int> lines;      // the file line of each pair, for messages
};

// Reads `path`, expecting `ncolumns` values after i and j on every line. Throws ConfigError
// "PATH:LINE: what is wrong" (a missing file, a line that is not i j and the values, an index
// that is not a whole number >= 0, a value that is not a finite number).
PairTable read_pair_table(const std::string& path, size_t ncolumns);

// Writes such a file: `header` as comment lines, then "i j v..." per pair (values with 10
// significant digits). Throws std::runtime_error naming the file when it cannot be written.
void write_pair_table(const std::string& path, const std::vector<std::string>& header, const std::vector<Bond>& pairs,
                      const std::vector<double>& values, size_t ncolumns);

}  // namespace pairmd
