#include "engine/pair_list_file.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "engine/config.h"

namespace pairmd {

namespace {

bool separator(char c) { return c == ' ' || c == '\t' || c == ',' || c == '\r'; }

// The next field of [p, end) (separators skipped), or false at the end of the line.
bool next_field(const char*& p, const char* end, std::string& field) {
  while (p < end && separator(*p)) ++p;
  if (p >= end) return false;
  const char* start = p;
  while (p < end && !separator(*p)) ++p;
  field.assign(start, p);
  return true;
}

}  // namespace

PairTable read_pair_table(const std::string& path, size_t ncolumns) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the pair list file: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  PairTable t;
  int line_no = 0;
  std::string field;
  auto fail = [&](const std::string& what) { throw ConfigError(path + ":" + std::to_string(line_no) + ": " + what); };
  std::vector<double> row;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    ++line_no;
    const char* p = text.data() + pos;
    const char* end = text.data() + eol;
    pos = eol + 1;
    if (const void* hash = std::memchr(p, '#', end - p)) end = static_cast<const char*>(hash);
    row.clear();
    while (next_field(p, end, field)) {
      char* stop = nullptr;
      errno = 0;
      const double v = std::strtod(field.c_str(), &stop);
      if (*stop != '\0' || !std::isfinite(v) || errno == ERANGE)
        fail("expected a number, got '" + field + "' (a pair is: i j and " + std::to_string(ncolumns) + " value(s))");
      row.push_back(v);
    }
    if (row.empty()) continue;
    if (row.size() != 2 + ncolumns)
      fail("expected i j and " + std::to_string(ncolumns) + " value(s) (the pair list's columns), got " +
           std::to_string(row.size()) + " number(s)");
    for (int s = 0; s < 2; ++s)
      if (!(row[s] >= 0) || row[s] != std::floor(row[s]) || row[s] > 2147483647.0)
        fail("expected a particle index (a whole number >= 0), got " + field.assign(std::to_string(row[s])));
    t.pairs.push_back({static_cast<int>(row[0]), static_cast<int>(row[1]), static_cast<int>(t.pairs.size())});
    t.values.insert(t.values.end(), row.begin() + 2, row.end());
    t.lines.push_back(line_no);
  }
  return t;
}

void write_pair_table(const std::string& path, const std::vector<std::string>& header, const std::vector<Bond>& pairs,
                      const std::vector<double>& values, size_t ncolumns) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
  for (const std::string& h : header) std::fprintf(f, "# %s\n", h.c_str());
  for (size_t k = 0; k < pairs.size(); ++k) {
    std::fprintf(f, "%d %d", pairs[k].i, pairs[k].j);
    for (size_t q = 0; q < ncolumns; ++q) std::fprintf(f, " %.10g", values[k * ncolumns + q]);
    std::fputc('\n', f);
  }
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace pairmd
