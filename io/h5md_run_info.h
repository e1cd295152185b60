// What a pairmd trajectory says about the run that wrote it (its /parameters group, and the
// units module of /h5md): the unit system a command that reads the file needs (docs/output.md).
#pragma once

#include <string>

namespace pairmd {

struct H5mdRunInfo {
  std::string units;  // "lj" or "real"; "" where the file does not say (not written by pairmd)
};

// Reads it in this process: call it on a file that read_h5md_frame (which reads damaged files in
// a child process) has read before. Throws std::runtime_error naming the file when it is not
// HDF5 or its units are none that pairmd knows.
H5mdRunInfo read_h5md_run_info(const std::string& path);

}  // namespace pairmd
