// The readers of start files (engine/start_file.h): H5MD trajectories written by pairmd.
#include "engine/start_file.h"

#include "io/h5md.h"

namespace pairmd {

StartFrame read_start_file(const std::string& path, int64_t frame) {
  H5mdFrame f = read_h5md_frame(path, frame);
  return {std::move(f.state), std::move(f.topology), f.time};
}

}  // namespace pairmd
