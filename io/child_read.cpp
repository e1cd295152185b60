#include "io/child_read.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>

#include "io/hdf5_util.h"

namespace pairmd {

void ByteWriter::put_state(const SystemState& s) {
  put(s.step);
  put(s.box.lo);
  put(s.box.L);
  put<int32_t>(s.box.periodic ? 1 : 0);
  put_vec(s.position);
  put_vec(s.velocity);
  put_vec(s.image);
  put_vec(s.type);
  put_vec(s.mass);
  put_vec(s.charge);
  put<uint64_t>(s.type_names.size());
  for (const std::string& n : s.type_names) put_str(n);
}

SystemState ByteReader::get_state() {
  SystemState s;
  s.step = get<int64_t>();
  s.box.lo = get<Vec3d>();
  s.box.L = get<Vec3d>();
  s.box.periodic = get<int32_t>() != 0;
  s.position = get_vec<Vec3d>();
  s.velocity = get_vec<Vec3d>();
  s.image = get_vec<Int3>();
  s.type = get_vec<int>();
  s.mass = get_vec<double>();
  s.charge = get_vec<double>();
  const uint64_t nt = get<uint64_t>();
  for (uint64_t k = 0; k < nt; ++k) s.type_names.push_back(get_str());
  return s;
}

namespace {

bool write_fully(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<size_t>(w);
  }
  return true;
}

// The child: a status byte (0: the bytes of what was read follow; 1: an error message does).
[[noreturn]] void child(int fd, const std::function<std::string()>& read) {
  std::string msg;
  char status = 0;
  try {
    msg = read();
  } catch (const std::exception& e) {
    status = 1;
    msg = e.what();
  }
  const bool ok = write_fully(fd, std::string(1, status)) && write_fully(fd, msg);
  _exit(ok ? 0 : 3);
}

// Everything the child writes to `fd` until it closes it, or until `seconds` have passed
// (`timed_out`).
std::string drain(int fd, int seconds, bool& timed_out) {
  std::string bytes;
  char buf[1 << 16];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      return bytes;
    }
    struct pollfd p {
      fd, POLLIN, 0
    };
    const int r = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return bytes;
    bytes.append(buf, static_cast<size_t>(got));
  }
}

}  // namespace

std::optional<std::string> read_in_child(const std::string& what, const std::function<std::string()>& read,
                                         int seconds) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  std::fflush(nullptr);
  std::unique_lock<std::recursive_mutex> lock(h5::library_mutex());
  const pid_t pid = fork();
  if (pid < 0) {
    lock.unlock();
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], read);
  }
  lock.unlock();
  ::close(fds[1]);
  bool timed_out = false;
  std::string bytes = drain(fds[0], seconds, timed_out);
  ::close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw std::runtime_error(what + ": reading it did not finish within " + std::to_string(seconds) +
                             " s (a damaged file?)");
  if (WIFSIGNALED(wstatus))
    throw std::runtime_error(what + " is damaged: the HDF5 library crashed reading it (signal " +
                             std::to_string(WTERMSIG(wstatus)) + ")");
  if (bytes.empty() || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
    throw std::runtime_error(what + ": the reading process failed");
  if (bytes[0] != 0) throw std::runtime_error(bytes.substr(1));
  return bytes.substr(1);
}

}  // namespace pairmd
