// The dynamic state of a simulation, in double precision and in the order the particles were
// created (index == tag). Backends may store particles in another order internally; what they
// hand back here is always in tag order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/box.h"
#include "base/vec3.h"

namespace pairmd {

struct SystemState {
  Box box{};
  std::vector<Vec3d> position;  // wrapped into the box when periodic
  std::vector<Vec3d> velocity;
  std::vector<Int3> image;  // box crossings; unwrapped = position + image * L
  std::vector<int> type;    // index into type_names
  std::vector<double> mass;
  std::vector<double> charge;
  std::vector<std::string> type_names;
  int64_t step = 0;

  size_t size() const { return position.size(); }

  Vec3d unwrapped(size_t i) const {
    return {position[i].x + image[i].x * box.L.x, position[i].y + image[i].y * box.L.y,
            position[i].z + image[i].z * box.L.z};
  }
};

}  // namespace pairmd
