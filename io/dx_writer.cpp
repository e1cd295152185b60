#include "io/dx_writer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "base/text.h"

namespace pairmd {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what);
}

}  // namespace

void write_dx(const std::string& path, const Grid3& g, const std::string& title) {
  if (g.values.size() != g.size())
    fail(path,
         "the lattice has " + std::to_string(g.values.size()) + " values for " + std::to_string(g.size()) + " points");
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  const int nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
  std::fprintf(f, "# %s\n", title.empty() ? "pairmd potential map" : title.c_str());
  std::fprintf(f, "# unit: %s\n", g.unit.c_str());
  std::fprintf(f, "object 1 class gridpositions counts %d %d %d\n", nx, ny, nz);
  std::fprintf(f, "origin %.10g %.10g %.10g\n", g.origin[0], g.origin[1], g.origin[2]);
  std::fprintf(f, "delta %.10g 0 0\n", g.spacing[0]);
  std::fprintf(f, "delta 0 %.10g 0\n", g.spacing[1]);
  std::fprintf(f, "delta 0 0 %.10g\n", g.spacing[2]);
  std::fprintf(f, "object 2 class gridconnections counts %d %d %d\n", nx, ny, nz);
  std::fprintf(f, "object 3 class array type double rank 0 items %zu data follows\n", g.size());
  size_t col = 0;
  for (int i = 0; i < nx; ++i)
    for (int j = 0; j < ny; ++j)
      for (int k = 0; k < nz; ++k) {
        const double v = g.values[(static_cast<size_t>(k) * ny + j) * nx + i];
        std::fprintf(f, ++col % 3 == 0 ? "%.10g\n" : "%.10g ", v);
      }
  if (col % 3 != 0) std::fprintf(f, "\n");
  std::fprintf(f, "attribute \"dep\" string \"positions\"\n");
  std::fprintf(f, "object \"potential\" class field\n");
  std::fprintf(f, "component \"positions\" value 1\n");
  std::fprintf(f, "component \"connections\" value 2\n");
  std::fprintf(f, "component \"data\" value 3\n");
  const bool ok = !std::ferror(f);
  if (std::fclose(f) != 0 || !ok) fail(path, std::string("write failed: ") + std::strerror(errno));
}

Grid3 read_dx(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  Grid3 g;
  int deltas = 0;
  bool have_counts = false, have_origin = false;
  std::string line;
  int lineno = 0;
  auto where = [&]() { return "line " + std::to_string(lineno) + ": "; };
  while (std::getline(in, line)) {
    ++lineno;
    drop_cr(line);
    if (line.rfind("# unit:", 0) == 0) {
      g.unit = line.substr(7);
      const size_t b = g.unit.find_first_not_of(' ');
      g.unit = b == std::string::npos ? "" : g.unit.substr(b);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string word;
    s >> word;
    if (word == "object" && line.find("gridpositions") != std::string::npos) {
      const size_t c = line.find("counts");
      std::istringstream cs(line.substr(c + 6));
      if (c == std::string::npos || !(cs >> g.dims[0] >> g.dims[1] >> g.dims[2]))
        fail(path, where() + "expected 'gridpositions counts nx ny nz'");
      for (int d = 0; d < 3; ++d)
        if (g.dims[d] <= 0) fail(path, where() + "lattice counts must be positive");
      // Bounded before anything is allocated (and before the product can overflow).
      if (static_cast<double>(g.dims[0]) * g.dims[1] * g.dims[2] > static_cast<double>(kMaxMapPoints))
        fail(path, where() + "the lattice has more than " + std::to_string(kMaxMapPoints) + " points");
      have_counts = true;
    } else if (word == "origin") {
      if (!(s >> g.origin[0] >> g.origin[1] >> g.origin[2])) fail(path, where() + "expected 'origin x y z'");
      have_origin = true;
    } else if (word == "delta") {
      double d[3];
      if (!(s >> d[0] >> d[1] >> d[2]) || deltas >= 3) fail(path, where() + "expected three 'delta' lines");
      for (int e = 0; e < 3; ++e)
        if (e != deltas && d[e] != 0.0) fail(path, where() + "only axis-aligned lattices are supported");
      g.spacing[deltas] = d[deltas];
      ++deltas;
    } else if (word == "object" && line.find("class array") != std::string::npos) {
      if (!have_counts || !have_origin || deltas != 3)
        fail(path, where() + "the data array comes before counts, origin and three deltas");
      const size_t c = line.find("items");
      size_t items = 0;
      std::istringstream is(c == std::string::npos ? "" : line.substr(c + 5));
      if (!(is >> items)) fail(path, where() + "expected 'items N' in the array object");
      if (items != g.size())
        fail(path,
             where() + "the array has " + std::to_string(items) + " items for " + std::to_string(g.size()) + " points");
      // Each value takes at least two bytes ("0 "): a file too short for its items is refused
      // before its array is allocated.
      const std::streampos here = in.tellg();
      in.seekg(0, std::ios::end);
      const std::streamoff left = in.tellg() - here;
      in.seekg(here);
      if (here < 0 || left < 0 || static_cast<double>(items) > static_cast<double>(left) / 2 + 1)
        fail(path, where() + "the data array ends early: it promises " + std::to_string(items) +
                       " values, the rest of the file has room for at most " +
                       std::to_string(left < 0 ? 0 : left / 2 + 1));
      const int nx = g.dims[0], ny = g.dims[1], nz = g.dims[2];
      g.values.assign(items, 0.0);
      for (int i = 0; i < nx; ++i)
        for (int j = 0; j < ny; ++j)
          for (int k = 0; k < nz; ++k) {
            double v;
            if (!(in >> v))
              fail(path, "the data array ends early or holds a non-number (point " + std::to_string(i) + ", " +
                             std::to_string(j) + ", " + std::to_string(k) + ")");
            g.values[(static_cast<size_t>(k) * ny + j) * nx + i] = v;
          }
      return g;
    }
  }
  fail(path, "no data array found (not an OpenDX scalar field?)");
}

}  // namespace pairmd
