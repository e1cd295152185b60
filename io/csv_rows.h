// Dropping rows of a CSV file that a restart will write again (the thermo and pull records,
// the replica-exchange log and walk): the header and the rows to keep are written to a
// temporary file that is renamed over the original, so a failure leaves the file as it was.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace pairmd {

enum class RowFate {
  Keep,
  Drop,           // dropped and counted (a row the restart will not reproduce as it was)
  DropUncounted,  // dropped, not counted (the restart writes the same row again)
};

// Keeps the header line and every row `fate` keeps; rewrites the file only if a row goes. A
// missing file is left missing. Returns the rows dropped as Drop. Throws if it cannot rewrite.
int64_t drop_csv_rows(const std::string& path, const std::function<RowFate(const std::string& row)>& fate);

}  // namespace pairmd
