// XYZ files, plain and extended (ASE, OVITO): a frame of names and positions, with the box and
// velocities where the extended comment line declares them. Problems are FILE:LINE: what.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

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

}  // namespace

StartStructure read_xyz(const std::string& path, int64_t frame, const Vec3d& box, bool periodic) {
  std::ifstream in(path);
  if (!in) throw StartFileError("cannot open '" + path + "'");
  auto fail = [&](int line, const std::string& what) -> void {
    throw StartFileError(path + ":" + std::to_string(line) + ": " + what);
  };
  auto number = [&](int line, const std::string& w, const char* what) {
    char* end = nullptr;
    const double v = std::strtod(w.c_str(), &end);
    if (end == w.c_str() || *end || !std::isfinite(v))
      fail(line, std::string("expected a number for ") + what + ", got '" + w + "'");
    return v;
  };
  // Frames: where each starts (its count line), read once; frame -1 is the last.
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(l);
  }
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
      fail(static_cast<int>(at + 1), "expected the number of atoms of a frame, got '" + lines[at] + "'");
    if (n > kMaxParticles) fail(static_cast<int>(at + 1), std::to_string(n) + " atoms, more than pairmd can hold");
    if (at + 2 + static_cast<size_t>(n) > lines.size())
      fail(static_cast<int>(lines.size()), "the frame starting at line " + std::to_string(at + 1) + " promises " +
                                               std::to_string(n) + " atoms, the file ends before");
    starts.push_back(at);
    at += 2 + static_cast<size_t>(n);
  }
  if (starts.empty()) throw StartFileError(path + ": no frames (an empty file?)");
  if (frame < 0) frame = static_cast<int64_t>(starts.size()) - 1;
  if (frame >= static_cast<int64_t>(starts.size()))
    throw StartFileError(path + ": frame " + std::to_string(frame) + " is out of range (the file holds " +
                         std::to_string(starts.size()) + " frames; -1 is the last)");
  const size_t first = starts[frame];
  const size_t n = static_cast<size_t>(std::strtoll(lines[first].c_str(), nullptr, 10));
  const int comment_line = static_cast<int>(first + 2);

  StartStructure out;
  out.types_by_name = true;
  SystemState& s = out.state;
  s.box.periodic = periodic;
  s.box.lo = {0, 0, 0};
  bool have_lattice = false;
  Columns cols;
  for (const auto& [key, value] : comment_keys(lines[first + 1])) {
    std::string k = key;
    for (char& c : k) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (k == "lattice") {
      const std::vector<std::string> v = words(value);
      if (v.size() != 9)
        fail(comment_line, "Lattice= needs 9 numbers (3 cell vectors), got " + std::to_string(v.size()));
      double m[9];
      for (int i = 0; i < 9; ++i) m[i] = number(comment_line, v[i], "a Lattice component");
      if (m[1] != 0 || m[2] != 0 || m[3] != 0 || m[5] != 0 || m[6] != 0 || m[7] != 0)
        fail(comment_line, "the Lattice is not orthorhombic; pairmd supports orthorhombic boxes only");
      if (!(m[0] > 0 && m[4] > 0 && m[8] > 0)) fail(comment_line, "the Lattice's edges are not > 0");
      s.box.L = {m[0], m[4], m[8]};
      have_lattice = true;
    } else if (k == "origin") {
      const std::vector<std::string> v = words(value);
      if (v.size() != 3) fail(comment_line, "Origin= needs 3 numbers");
      s.box.lo = {number(comment_line, v[0], "Origin"), number(comment_line, v[1], "Origin"),
                  number(comment_line, v[2], "Origin")};
    } else if (k == "properties") {
      // name:type:count triples; columns of other properties are read past.
      std::vector<std::string> parts;
      std::stringstream ss(value);
      for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
      if (parts.size() % 3 != 0) fail(comment_line, "Properties= is not a list of name:type:count");
      cols = Columns{-1, -1, -1, 0};
      int col = 0;
      for (size_t i = 0; i < parts.size(); i += 3) {
        const std::string& name = parts[i];
        const int c = std::atoi(parts[i + 2].c_str());
        if (c < 1) fail(comment_line, "Properties=: property " + name + " has no columns");
        if ((name == "species" || name == "type_name" || name == "element") && c == 1 && cols.species < 0)
          cols.species = col;
        else if (name == "pos" && c == 3)
          cols.pos = col;
        else if ((name == "vel" || name == "velo" || name == "velocities") && c == 3)
          cols.vel = col;
        col += c;
      }
      cols.count = static_cast<size_t>(col);
      if (cols.species < 0 || cols.pos < 0) fail(comment_line, "Properties= has no species:S:1 or no pos:R:3");
    }
  }
  std::vector<std::string> names;
  s.position.resize(n);
  s.velocity.assign(n, Vec3d{0, 0, 0});
  s.image.assign(n, Int3{0, 0, 0});
  s.type.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int line = static_cast<int>(first + 3 + i);
    const std::vector<std::string> w = words(lines[first + 2 + i]);
    if (w.size() < cols.count)
      fail(line, "expected " + std::to_string(cols.count) + " columns (" +
                     (cols.vel >= 0 ? "name, position, velocity" : "name x y z") + "), got " +
                     std::to_string(w.size()));
    const std::string& name = w[cols.species];
    size_t t = 0;
    while (t < names.size() && names[t] != name) ++t;
    if (t == names.size()) names.push_back(name);
    s.type[i] = static_cast<int>(t);
    s.position[i] = {number(line, w[cols.pos], "x"), number(line, w[cols.pos + 1], "y"),
                     number(line, w[cols.pos + 2], "z")};
    if (cols.vel >= 0)
      s.velocity[i] = {number(line, w[cols.vel], "vx"), number(line, w[cols.vel + 1], "vy"),
                       number(line, w[cols.vel + 2], "vz")};
  }
  s.type_names = names;
  out.has_velocities = cols.vel >= 0;
  if (!have_lattice) {
    if (box.x > 0) {
      s.box.L = box;
      out.notes.push_back("box " + std::to_string(box.x) + " x " + std::to_string(box.y) + " x " +
                          std::to_string(box.z) + " from system.file.box (the file has no Lattice=)");
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
      fail(comment_line,
           "the file gives no box (no Lattice=\"...\" on its comment line): give system.file.box: "
           "[Lx, Ly, Lz], or system.boundary: open");
    }
  }
  return out;
}

}  // namespace pairmd
