#include <stdexcept>

#include "engine/h5md.h"

namespace pairmd {

H5mdFrame read_h5md_frame(const std::string& path, int64_t) {
  throw std::runtime_error("reading H5MD files is not available in this build yet ('" + path + "')");
}

}  // namespace pairmd
