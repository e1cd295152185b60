#include "io/output_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace pairmd {

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

// Directory and file name of a prefix ("out/run" -> "out", "run"; "run" -> ".", "run").
std::pair<std::string, std::string> split_prefix(const std::string& prefix) {
  const size_t slash = prefix.find_last_of('/');
  if (slash == std::string::npos) return {".", prefix};
  return {slash == 0 ? "/" : prefix.substr(0, slash), prefix.substr(slash + 1)};
}

std::string holder_text() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  char when[64] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return "pid " + std::to_string(getpid()) + " on " + host + ", since " + when + "\n";
}

void write_holder(int fd) {
  const std::string text = holder_text();
  if (ftruncate(fd, 0) == 0 && pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size())) return;
  // The lock is what counts; the text is only for the message another run prints.
}

std::string read_holder(int fd) {
  char buf[256];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace

std::vector<std::string> OutputFiles::all() const {
  return {trajectory(), gsd(), thermo(), checkpoint(), potential_map(), log(), pull(), pull_plot()};
}

std::vector<std::string> OutputFiles::existing() const {
  std::vector<std::string> out;
  for (const std::string& p : all())
    if (exists(p)) out.push_back(p);
  return out;
}

namespace {

bool all_digits(const std::string& s, size_t from) {
  if (from >= s.size()) return false;
  for (size_t k = from; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return false;
  return true;
}

// Whether the file at `fd` is empty or begins with `start`.
bool empty_or_begins(int fd, const std::string& start) {
  std::string head(start.size(), '\0');
  const ssize_t n = pread(fd, &head[0], head.size(), 0);
  return n == 0 || (n == static_cast<ssize_t>(head.size()) && head == start);
}

// A temporary file pairmd wrote: a regular file of this user, empty or beginning with `start`.
bool is_pairmds(const std::string& path, const std::string& start) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  const bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() && empty_or_begins(fd, start);
  ::close(fd);
  return ok;
}

const std::string kHdf5Signature("\x89HDF\r\n\x1a\n", 8);
const std::string kGsdSignature("\xdf\x65\xdf\x65\xdf\x65\xdf\x65", 8);

}  // namespace

std::vector<std::string> OutputFiles::stale_temporaries() const {
  const auto [dir, base] = split_prefix(prefix);
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  // The files pairmd writes through NAME.tmp.PID, and how each of them begins.
  const std::pair<std::string, std::string> kinds[] = {{base + ".checkpoint.h5.tmp.", kHdf5Signature},
                                                       {base + ".thermo.csv.tmp.", "step,"},
                                                       {base + ".pull.csv.tmp.", "step,"},
                                                       {base + ".gsd.tmp.", kGsdSignature},
                                                       {base + ".pull.svg.tmp.", "<svg"}};
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    for (const auto& [start, signature] : kinds) {
      if (name.compare(0, start.size(), start) != 0 || !all_digits(name, start.size())) continue;
      const std::string path = dir == "." && prefix.find('/') == std::string::npos ? name : dir + "/" + name;
      if (is_pairmds(path, signature)) out.push_back(path);
    }
  }
  closedir(d);
  return out;
}

bool same_prefix(const std::string& a, const std::string& b) {
  if (a == b) return true;
  auto absolute = [](const std::string& p) {
    const auto [dir, base] = split_prefix(p);
    char buf[PATH_MAX];
    if (!realpath(dir.c_str(), buf)) return p;
    return std::string(buf) + "/" + base;
  };
  return absolute(a) == absolute(b);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

namespace {

// The suffixes a run (or, the last three, an ensemble) gives its files. Longest first, so that
// "P.checkpoint.h5" is tried as a checkpoint before it is tried as a trajectory of "P.checkpoint".
const char* const kRunSuffixes[] = {".checkpoint.h5", ".potential.dx", ".thermo.csv", ".pull.csv", ".pull.svg",
                                    ".lock",          ".h5",           ".gsd",        ".log"};
const char* const kEnsembleSuffixes[] = {".exchange.csv", ".walk.csv", ".walk.svg"};

bool ends_with(const std::string& s, const std::string& e) {
  return s.size() > e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0;
}

// A replica's checkpoint P.rNN.checkpoint.h5 exists beside P.
bool has_replica_checkpoint(const std::string& prefix) {
  const auto [dir, base] = split_prefix(prefix);
  DIR* d = opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  const std::string start = base + ".r", end = ".checkpoint.h5";
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() > start.size() + end.size() && name.compare(0, start.size(), start) == 0 && ends_with(name, end) &&
        all_digits(name.substr(0, name.size() - end.size()), start.size())) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

// owning_run for one spelling of the path.
std::string owning_run_of(std::string name) {
  // A temporary (P.checkpoint.h5.tmp.PID) belongs to the file it replaces.
  const size_t tmp = name.rfind(".tmp.");
  if (tmp != std::string::npos && all_digits(name, tmp + 5)) name.resize(tmp);
  for (const char* suffix : kRunSuffixes) {
    if (!ends_with(name, suffix)) continue;
    const OutputFiles run{name.substr(0, name.size() - std::strlen(suffix))};
    if (exists(run.lock()) || exists(run.checkpoint())) return run.prefix;
  }
  for (const char* suffix : kEnsembleSuffixes) {
    if (!ends_with(name, suffix)) continue;
    const std::string prefix = name.substr(0, name.size() - std::strlen(suffix));
    if (exists(prefix + ".lock") || has_replica_checkpoint(prefix)) return prefix;
  }
  return "";
}

}  // namespace

std::string owning_run(const std::string& path) {
  const std::string owner = owning_run_of(path);
  if (!owner.empty()) return owner;
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::canonical(path, ec);
  return ec || target.string() == path ? "" : owning_run_of(target.string());
}

std::string output_refusal(const std::string& path, const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs)
    if (!in.empty() && same_file(path, in)) return "is the input " + in + " of this command";
  const std::string run = owning_run(path);
  if (!run.empty())
    return "is a file of the pairmd run with prefix '" + run + "' (" + run +
           (exists(run + ".checkpoint.h5") ? ".checkpoint.h5" : ".lock") + " is there)";
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return S_ISDIR(st.st_mode) ? "is a directory" : "is not a regular file";
  return "";
}

void require_output_path(const std::string& option, const std::string& path, const std::vector<std::string>& inputs) {
  const std::string why = output_refusal(path, inputs);
  if (!why.empty())
    throw std::invalid_argument(option + " " + path + " " + why + "; nothing was written (give another file name)");
}

int standard_streams_at(const std::string& path) {
  struct stat f;
  if (stat(path.c_str(), &f) != 0) return 0;
  int streams = 0;
  for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat s;
    if (fstat(fd, &s) == 0 && S_ISREG(s.st_mode) && s.st_dev == f.st_dev && s.st_ino == f.st_ino) streams |= fd;
  }
  return streams;
}

int create_new_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create '" + path + "': " + std::strerror(errno));
  return fd;
}

void write_new_file(const std::string& path, const std::string& text) {
  const int fd = create_new_file(path);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const std::string why = std::strerror(w < 0 ? errno : ENOSPC);
      ::close(fd);
      ::unlink(path.c_str());
      throw std::runtime_error("cannot write '" + path + "': " + why);
    }
    done += static_cast<size_t>(w);
  }
  if (::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(path.c_str());
    throw std::runtime_error("cannot write '" + path + "': " + why);
  }
}

OutputClaim::OutputClaim(const std::string& prefix) : path_(prefix + ".lock") {
  for (int attempt = 0; attempt < 100; ++attempt) {
    // O_NOFOLLOW: a link named PREFIX.lock is refused, never followed (it could make the run
    // truncate the file it points to); O_NONBLOCK: a FIFO of that name must not hang the open.
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) {
      const int e = errno;
      if (e == ELOOP || e == EISDIR || e == ENXIO)
        throw std::runtime_error("the lock file '" + path_ + "' that claims the output prefix '" + prefix + "' is " +
                                 (e == ELOOP    ? "a symbolic link"
                                  : e == EISDIR ? "a directory"
                                                : "not a regular file") +
                                 "; pairmd writes only a regular file there: remove it, or choose another prefix");
      throw std::runtime_error("cannot create the lock file '" + path_ + "' that claims the output prefix '" + prefix +
                               "': " + std::strerror(e));
    }
    struct stat kind;
    if (fstat(fd, &kind) != 0 || !S_ISREG(kind.st_mode)) {
      ::close(fd);
      throw std::runtime_error("the lock file '" + path_ + "' that claims the output prefix '" + prefix +
                               "' is not a regular file; pairmd writes only a regular file there: remove it, or "
                               "choose another prefix");
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int e = errno;
      if (e == EWOULDBLOCK) {
        const std::string holder = read_holder(fd);
        ::close(fd);
        throw OutputInUse("the output prefix '" + prefix + "' is in use by another pairmd run (" +
                          (holder.empty() ? std::string("it holds ") + path_ : holder + "; lock file " + path_) + ")");
      }
      if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL) {
        warning_ = "the file system of '" + path_ + "' cannot lock files (" + std::strerror(e) +
                   "): another run started on the same prefix would not be stopped";
        fd_ = fd;
        write_holder(fd_);
        return;
      }
      ::close(fd);
      throw std::runtime_error("cannot lock '" + path_ + "': " + std::strerror(e));
    }
    // The run that held the lock before us removes the file as it finishes; if it did so after
    // we opened it, our lock is on a file nobody else sees. Then start again on the file that
    // is there now.
    struct stat mine, there;
    if (fstat(fd, &mine) == 0 && stat(path_.c_str(), &there) == 0 && mine.st_dev == there.st_dev &&
        mine.st_ino == there.st_ino) {
      fd_ = fd;
      write_holder(fd_);
      return;
    }
    ::close(fd);
  }
  throw std::runtime_error("cannot claim the output prefix '" + prefix + "': its lock file '" + path_ +
                           "' keeps being replaced");
}

OutputClaim::~OutputClaim() { release(); }

void OutputClaim::release() {
  if (fd_ < 0) return;
  // Removed while still locked: a run waiting on the old file then sees it is gone (above).
  ::unlink(path_.c_str());
  ::close(fd_);
  fd_ = -1;
}

}  // namespace pairmd
