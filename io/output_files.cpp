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

std::vector<std::string> OutputFiles::stale_temporaries() const {
  const auto [dir, base] = split_prefix(prefix);
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  const std::string starts[] = {base + ".checkpoint.h5.tmp.", base + ".thermo.csv.tmp.", base + ".gsd.tmp.",
                                base + ".pull.svg.tmp."};
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    for (const std::string& s : starts)
      if (name.size() > s.size() && name.compare(0, s.size(), s) == 0)
        out.push_back(dir == "." && prefix.find('/') == std::string::npos ? name : dir + "/" + name);
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

OutputClaim::OutputClaim(const std::string& prefix) : path_(prefix + ".lock") {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw std::runtime_error("cannot create the lock file '" + path_ + "' that claims the output prefix '" + prefix +
                               "': " + std::strerror(errno));
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
