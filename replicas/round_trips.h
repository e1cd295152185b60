// Round trips of one replica through the temperature ladder: a round trip is a walk from the
// lowest temperature to the highest and back to the lowest, the measure of how well replica
// exchange mixes (each completed one carries a configuration across every barrier the hot end
// crosses). Visits to the ends are what count; steps in between do not.
#pragma once

#include <cstdint>

namespace pairmd {

struct RoundTrips {
  enum End : int { kNone = 0, kBottom = 1, kTop = 2 };
  int last_end = kNone;         // the end the replica visited last
  bool up_from_bottom = false;  // its last visit to the top came from the bottom
  int64_t count = 0;            // completed bottom -> top -> bottom walks

  // The replica is now at temperature index `index` of `ladder_size` (call after every exchange,
  // and once at the start). A ladder of one temperature has no walks.
  void visit(int index, int ladder_size) {
    if (ladder_size < 2) return;
    if (index == 0) {
      if (last_end == kTop && up_from_bottom) ++count;
      if (last_end != kBottom) up_from_bottom = false;
      last_end = kBottom;
    } else if (index == ladder_size - 1) {
      if (last_end == kBottom) up_from_bottom = true;
      last_end = kTop;
    }
  }
};

}  // namespace pairmd
