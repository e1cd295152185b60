#include "io/csv_rows.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "io/output_files.h"

namespace pairmd {

int64_t drop_csv_rows(const std::string& path, const std::function<RowFate(const std::string& row)>& fate) {
  std::ifstream in(path);
  if (!in) return 0;
  std::ostringstream kept;
  std::string line;
  bool header = true;
  int64_t dropped = 0, removed = 0;
  while (std::getline(in, line)) {
    if (!header) {
      const RowFate f = fate(line);
      if (f != RowFate::Keep) {
        dropped += f == RowFate::Drop;
        ++removed;
        continue;
      }
    }
    header = false;
    kept << line << "\n";
  }
  in.close();
  if (removed == 0) return 0;
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  try {
    write_new_file(tmp, kept.str());  // exclusively: a link of that name is never followed
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("cannot rewrite '" + path + "': " + e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rewrite '" + path + "'");
  }
  return dropped;
}

}  // namespace pairmd
