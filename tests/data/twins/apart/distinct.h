// A fixture of tests/python/check_find_twins.py: structs that share some fields but are not
// twins, and members the finder must not take for fields.
#pragma once

#include <functional>
#include <string>
#include <vector>

enum class Kind { Alpha, Beta, Gamma, Delta };
enum class Mode { Alpha, Beta, Gamma, Delta };

struct Angle {
  int i, j, k, type;
};
struct Dihedral {
  int i, j, k, l, type;
};

struct Writer {
  Writer(std::string path, long every);
  void write(const std::string& text) { last = text; }
  static constexpr int kLimit = 3;
  std::string path;
  long every = 0;
  std::function<void(int)> on_write;
  std::string last;
};

struct Reader {
  std::string path;
  long every = 0;
  std::vector<std::string> lines;
  bool (*accept)(const std::string&) = nullptr;
  std::string read(int line) const;
  int count() const { return static_cast<int>(lines.size()); }
};
