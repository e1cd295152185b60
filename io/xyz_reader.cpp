// XYZ files, plain and extended (ASE, OVITO): a frame of names and positions, with the box and
// velocities where the extended comment line declares them. Problems are FILE:LINE: what.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/text.h"
#include "io/start_readers.h"

namespace pairmd {

namespace {

// key=value pairs of an extended XYZ comment line; values may be quoted ("a b c").
std::vector<std::pair<std::string, std::string>> comment_keys(const std::string& line) {
  std::vector<std::pair<std::string, std::string>> kv;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t k0 = i;
    while (i < line.size() && line[i] != '=' && line[i] != ' ' && line[i] != '\t') ++i;
    const std::string key = line.substr(k0, i - k0);
    if (i >= line.size() || line[i] != '=') {
      if (!key.empty()) kv.emplace_back(key, "");
      continue;
    }
    ++i;
    std::string value;
    if (i < line.size() && (line[i] == '"' || line[i] == '\'')) {
      const char q = line[i++];
      const size_t end = line.find(q, i);
      value = line.substr(i, end == std::string::npos ? std::string::npos : end - i);
      i = end == std::string::npos ? line.size() : end + 1;
    } else {
      const size_t v0 = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
      value = line.substr(v0, i - v0);
    }
    kv.emplace_back(key, value);
  }
  return kv;
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

struct Columns {
  int species = 0, pos = 1, vel = -1;
  size_t count = 4;  // columns a line must have at least
};

// The file's lines (without a CR before the newline), and its messages.
struct XyzFile {
  std::string path;
  std::vector<std::string> lines;

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw StartFileError(path + ":" + std::to_string(line) + ": " + what);
  }
  double number(int line, const std::string& w, const char* what) const {
    char* end = nullptr;
    const double v = std::strtod(w.c_str(), &end);
    if (end == w.c_str() || *end)
      fail(line, std::string("expected a number for ") + what + ", got '" + printable(w) + "'");
    if (!std::isfinite(v)) fail(line, std::string(what) + " is '" + printable(w) + "', not a finite number");
    return v;
  }
};

XyzFile read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw StartFileError("cannot open '" + path + "'");
  XyzFile f{path, {}};
  for (std::string l; std::getline(in, l);) {
    drop_cr(l);
    f.lines.push_back(l);
  }
  return f;
}

// Where each frame starts (its count line).
std::vector<size_t> frame_starts(const XyzFile& f) {
  const std::vector<std::string>& lines = f.lines;
  std::vector<size_t> starts;
  size_t at = 0;
  while (at < lines.size()) {
    const std::vector<std::string> w = words(lines[at]);
    if (w.empty()) {
      ++at;
      continue;
    }
    char* end = nullptr;
    const long long n = std::strtoll(w[0].c_str(), &end, 10);
    if (w.size() != 1 || *end || n < 1)
      f.fail(static_cast<int>(at + 1), "expected the number of atoms of a frame, got '" + printable(lines[at]) + "'");
    if (n > kMaxParticles) f.fail(static_cast<int>(at + 1), std::to_string(n) + " atoms, more than pairmd can hold");
    if (at + 2 + static_cast<size_t>(n) > lines.size())
      f.fail(static_cast<int>(lines.size()), "the frame starting at line " + std::to_string(at + 1) + " promises " +
                                                 std::to_string(n) + " atoms, the file ends before");
    starts.push_back(at);
    at += 2 + static_cast<size_t>(n);
  }
  if (starts.empty()) throw StartFileError(f.path + ": no frames (an empty file?)");
  return starts;
}

// Lattice="..." (orthorhombic): the box's edges.
Vec3d read_lattice(const XyzFile& f, int line, const std::string& value) {
  const std::vector<std::string> v = words(value);
  if (v.size() != 9) f.fail(line, "Lattice= needs 9 numbers (3 cell vectors), got " + std::to_string(v.size()));
  double m[9];
  for (int i = 0; i < 9; ++i) m[i] = f.number(line, v[i], "a Lattice component");
  if (m[1] != 0 || m[2] != 0 || m[3] != 0 || m[5] != 0 || m[6] != 0 || m[7] != 0)
    f.fail(line, "the Lattice is not orthorhombic; pairmd supports orthorhombic boxes only");
  if (!(m[0] > 0 && m[4] > 0 && m[8] > 0)) f.fail(line, "the Lattice's edges are not > 0");
  for (int d = 0; d < 9; d += 4) {
    const std::string problem = coordinate_problem(m[d], "the box's edge");
    if (!problem.empty()) f.fail(line, "Lattice=: " + problem);
  }
  return {m[0], m[4], m[8]};
}

// Properties=name:type:count...: the columns of species, positions and velocities; columns of
// other properties are read past.
Columns read_properties(const XyzFile& f, int line, const std::string& value) {
  std::vector<std::string> parts;
  std::stringstream ss(value);
  for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
  if (parts.size() % 3 != 0) f.fail(line, "Properties= is not a list of name:type:count");
  Columns cols{-1, -1, -1, 0};
  int col = 0;
  for (size_t i = 0; i < parts.size(); i += 3) {
    const std::string& name = parts[i];
    char* end = nullptr;
    const long c = std::strtol(parts[i + 2].c_str(), &end, 10);
    if (parts[i + 2].empty() || *end || c < 1 || c > 1000)
      f.fail(line, "Properties=: the column count of property " + printable(name) + " is '" + printable(parts[i + 2]) +
                       "', not a whole number from 1 to 1000");
    if ((name == "species" || name == "type_name" || name == "element") && c == 1 && cols.species < 0)
      cols.species = col;
    else if (name == "pos" && c == 3)
      cols.pos = col;
    else if ((name == "vel" || name == "velo" || name == "velocities") && c == 3)
      cols.vel = col;
    col += static_cast<int>(c);
  }
  cols.count = static_cast<size_t>(col);
  if (cols.species < 0 || cols.pos < 0) f.fail(line, "Properties= has no species:S:1 or no pos:R:3");
  return cols;
}

// The keys of an extended XYZ comment line: box (Lattice, Origin) into `box`, the columns.
Columns read_comment(const XyzFile& f, size_t at, Box& box, bool& have_lattice) {
  const int line = static_cast<int>(at + 1);
  Columns cols;
  for (const auto& [key, value] : comment_keys(f.lines[at])) {
    std::string k = key;
    for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (k == "lattice") {
      box.L = read_lattice(f, line, value);
      have_lattice = true;
    } else if (k == "origin") {
      const std::vector<std::string> v = words(value);
      if (v.size() != 3) f.fail(line, "Origin= needs 3 numbers");
      box.lo = {f.number(line, v[0], "Origin"), f.number(line, v[1], "Origin"), f.number(line, v[2], "Origin")};
      for (const double c : {box.lo.x, box.lo.y, box.lo.z}) {
        const std::string problem = coordinate_problem(c, "the box's bound");
        if (!problem.empty()) f.fail(line, "Origin=: " + problem);
      }
    } else if (k == "properties") {
      cols = read_properties(f, line, value);
    }
  }
  return cols;
}

// The n atom lines from index `first`: types (in the order their names appear), positions,
// velocities.
void read_atoms(const XyzFile& f, size_t first, size_t n, const Columns& cols, StartStructure& out) {
  SystemState& s = out.state;
  std::vector<std::string> names;
  out.lines.resize(n);
  s.position.resize(n);
  s.velocity.assign(n, Vec3d{0, 0, 0});
  s.image.assign(n, Int3{0, 0, 0});
  s.type.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int line = out.lines[i] = static_cast<int>(first + i + 1);
    const std::vector<std::string> w = words(f.lines[first + i]);
    if (w.size() < cols.count)
      f.fail(line, "expected " + std::to_string(cols.count) + " columns (" +
                       (cols.vel >= 0 ? "name, position, velocity" : "name x y z") + "), got " +
                       std::to_string(w.size()));
    const std::string& name = w[cols.species];
    size_t t = 0;
    while (t < names.size() && names[t] != name) ++t;
    if (t == names.size()) names.push_back(name);
    s.type[i] = static_cast<int>(t);
    s.position[i] = {f.number(line, w[cols.pos], "x"), f.number(line, w[cols.pos + 1], "y"),
                     f.number(line, w[cols.pos + 2], "z")};
    if (cols.vel >= 0)
      s.velocity[i] = {f.number(line, w[cols.vel], "vx"), f.number(line, w[cols.vel + 1], "vy"),
                       f.number(line, w[cols.vel + 2], "vz")};
  }
  s.type_names = names;
}

// A file without Lattice=: system.file.box, else (open boundaries) the particles' bounding box.
void default_box(const XyzFile& f, int comment_line, const Vec3d& box, bool periodic, StartStructure& out) {
  SystemState& s = out.state;
  if (box.x > 0) {
    s.box.L = box;
    out.notes.push_back("box " + std::to_string(box.x) + " x " + std::to_string(box.y) + " x " + std::to_string(box.z) +
                        " from system.file.box (the file has no Lattice=)");
  } else if (!periodic) {
    // Open boundaries: the particles' bounding box (used for maps and the output only).
    Vec3d lo = s.position[0], hi = s.position[0];
    for (const Vec3d& x : s.position) {
      lo = {std::min(lo.x, x.x), std::min(lo.y, x.y), std::min(lo.z, x.z)};
      hi = {std::max(hi.x, x.x), std::max(hi.y, x.y), std::max(hi.z, x.z)};
    }
    s.box.lo = lo;
    s.box.L = {std::max(hi.x - lo.x, 1e-6), std::max(hi.y - lo.y, 1e-6), std::max(hi.z - lo.z, 1e-6)};
  } else {
    f.fail(comment_line,
           "the file gives no box (no Lattice=\"...\" on its comment line): give system.file.box: "
           "[Lx, Ly, Lz], or system.boundary: open");
  }
}

}  // namespace

StartStructure read_xyz(const std::string& path, int64_t frame, const Vec3d& box, bool periodic) {
  const XyzFile f = read_lines(path);
  const std::vector<size_t> starts = frame_starts(f);
  if (frame < 0) frame = static_cast<int64_t>(starts.size()) - 1;
  if (frame >= static_cast<int64_t>(starts.size()))
    throw StartFileError(path + ": frame " + std::to_string(frame) + " is out of range (the file holds " +
                         std::to_string(starts.size()) + " frames; -1 is the last)");
  const size_t first = starts[frame];
  const size_t n = static_cast<size_t>(std::strtoll(f.lines[first].c_str(), nullptr, 10));

  StartStructure out;
  out.types_by_name = true;
  SystemState& s = out.state;
  s.box.periodic = periodic;
  s.box.lo = {0, 0, 0};
  bool have_lattice = false;
  const Columns cols = read_comment(f, first + 1, s.box, have_lattice);
  read_atoms(f, first + 2, n, cols, out);
  out.has_velocities = cols.vel >= 0;
  if (!have_lattice) default_box(f, static_cast<int>(first + 2), box, periodic, out);
  return out;
}

}  // namespace pairmd
