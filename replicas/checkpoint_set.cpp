#include "replicas/checkpoint_set.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "io/checkpoint.h"

namespace pairmd {

namespace {

const char* kCheckpointEnd = ".checkpoint.h5";
const char* kCommonEnd = ".checkpoint.common.h5";

bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat x, y;
  return stat(a.c_str(), &x) == 0 && stat(b.c_str(), &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

// Makes a rename in the file's directory durable.
void sync_directory_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  fsync(fd);
  ::close(fd);
}

// The step of a checkpoint file (-1: none there, or not a whole checkpoint).
int64_t checkpoint_step(const std::string& path) {
  if (path.empty() || access(path.c_str(), F_OK) != 0) return -1;
  try {
    return read_checkpoint(path).state.step;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

std::string common_checkpoint_path(const std::string& checkpoint) {
  if (ends_with(checkpoint, kCommonEnd)) return "";
  if (ends_with(checkpoint, kCheckpointEnd))
    return checkpoint.substr(0, checkpoint.size() - std::strlen(kCheckpointEnd)) + kCommonEnd;
  return checkpoint + ".common.h5";
}

CommonCheckpoint::CommonCheckpoint(std::string checkpoint)
    : checkpoint_(std::move(checkpoint)), common_(common_checkpoint_path(checkpoint_)) {}

std::string CommonCheckpoint::start(const std::string& restart, int64_t step) {
  if (same_file(restart, common_)) {
    step_ = step;
    return "";
  }
  return keep(step, restart);
}

std::string CommonCheckpoint::keep(int64_t step, const std::string& source) {
  const std::string& from = source.empty() ? checkpoint_ : source;
  // A link under a temporary name, renamed over the common file: the old one stays whole until
  // the new one is there. Only this run (it holds the prefix's claim) uses the temporary name.
  const std::string tmp = common_ + ".tmp";
  ::unlink(tmp.c_str());
  if (::link(from.c_str(), tmp.c_str()) != 0) {
    const int why = errno;
    if (why != EPERM && why != EOPNOTSUPP && why != ENOSYS && why != EMLINK && why != EXDEV)
      return "cannot link '" + from + "' to '" + tmp + "': " + std::strerror(why);
    // A file system without hard links: a copy.
    std::error_code ec;
    std::filesystem::copy_file(from, tmp, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) {
      ::unlink(tmp.c_str());
      return "cannot copy '" + from + "' to '" + tmp + "': " + ec.message();
    }
  }
  if (std::rename(tmp.c_str(), common_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot rename '" + tmp + "' to '" + common_ + "': " + why;
  }
  sync_directory_of(common_);
  step_ = step;
  return "";
}

RestartSet choose_restart_set(Communicator& comm, const std::string& given) {
  const std::string common = common_checkpoint_path(given);
  const std::vector<double> all =
      comm.allgather({static_cast<double>(checkpoint_step(given)), static_cast<double>(checkpoint_step(common))});
  const int k = comm.size();
  bool one_step = true;
  for (int r = 0; r < k; ++r) one_step = one_step && all[2 * r] == all[0];
  if (one_step && all[0] >= 0) return {given, ""};
  // The newest step that every rank has in one of its two files.
  double best = -1;
  for (const double step : all) {
    bool everyone = step > best;
    for (int r = 0; r < k && everyone; ++r) everyone = all[2 * r] == step || all[2 * r + 1] == step;
    if (everyone) best = step;
  }
  if (best < 0) return {given, ""};
  RestartSet set;
  set.path = all[2 * comm.rank()] == best ? given : common;
  std::ostringstream s;
  s << "restart: the replicas' newest checkpoints are of steps";
  for (int r = 0; r < k; ++r) s << " " << static_cast<int64_t>(all[2 * r]);
  s << " (a replica stopped early, or was killed while it wrote one); every replica has step "
    << static_cast<int64_t>(best) << " in its checkpoint or its common checkpoint (" << kCommonEnd
    << "): the ensemble goes on from there";
  set.note = s.str();
  return set;
}

}  // namespace pairmd
