// A fixture of tests/python/check_find_twins.py: a config spec and a settings struct that hold the
// same fields, as PotentialMapSpec and MapSettings did (the spec with `every` beside them).
#pragma once

#include <string>

struct MapSettingsFixture {
  std::string region = "box";
  double spacing = 1.0, padding = 5.0;
  double min_distance = 0.0;
  std::string kernel = "auto";
  int coarsen = 8;
  std::string method = "exact";
  std::string boundary = "open";
  double floor() const { return min_distance > 0 ? min_distance : 0.5 * spacing; }
};

struct MapSpecFixture {
  long every = 0;  // 0: off
  double spacing = 1.0;
  std::string region = "box";
  double padding = 5.0;
  std::string kernel = "auto";
  double min_distance = 0.0;
  std::string method = "exact";
  std::string boundary = "open";
};

// The same names exactly, in another order and with other types.
class CompareNamesFixture {
 public:
  std::string steps, repeats, warmup, sizes;
};
struct CompareCountsFixture {
  long warmup = 1000, steps = 500;
  std::vector<long> sizes;
  long repeats = 5;
  void check() const;
};
