// The files of one run, named by their prefix, and the claim a run holds on them while it runs.
//
// A run claims its prefix before it writes, truncates or removes anything: it takes an
// exclusive flock on PREFIX.lock. The kernel drops that lock when the process ends, however it
// ends (SIGKILL included), so a claim can never be left behind by a dead run; a second run on
// the same prefix finds the lock held and stops before touching a file. HDF5's own file
// locking is not relied on (it can be switched off, and it truncates before it locks).
// Policy and guarantees: docs/output.md.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace pairmd {

struct OutputFiles {
  std::string prefix;

  std::string trajectory() const { return prefix + ".h5"; }
  std::string gsd() const { return prefix + ".gsd"; }
  std::string log() const { return prefix + ".log"; }
  std::string thermo() const { return prefix + ".thermo.csv"; }
  std::string checkpoint() const { return prefix + ".checkpoint.h5"; }
  std::string potential_map() const { return prefix + ".potential.dx"; }
  std::string pull() const { return prefix + ".pull.csv"; }
  std::string pull_plot() const { return prefix + ".pull.svg"; }
  std::string lock() const { return prefix + ".lock"; }

  // Every file a run with this prefix may write (the lock file aside).
  std::vector<std::string> all() const;
  // Those of them that exist now.
  std::vector<std::string> existing() const;
  // Temporary files a killed run can leave (PREFIX.checkpoint.h5.tmp.PID, ...). Only a run
  // holding the claim writes them, so once the claim is ours, any that exist are left over.
  std::vector<std::string> stale_temporaries() const;
};

// True when two prefixes name the same files ("run" and "./run").
bool same_prefix(const std::string& a, const std::string& b);

// Another process holds the claim on the prefix.
struct OutputInUse : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OutputClaim {
 public:
  // Claims `prefix`. Throws OutputInUse (naming the holder's process) when another process holds
  // it, std::runtime_error when the lock file cannot be created (missing directory, no
  // permission). Where the file system cannot lock at all, the claim is taken without a lock
  // and warning() says so.
  explicit OutputClaim(const std::string& prefix);
  ~OutputClaim();
  OutputClaim(const OutputClaim&) = delete;
  OutputClaim& operator=(const OutputClaim&) = delete;

  const std::string& path() const { return path_; }
  const std::string& warning() const { return warning_; }
  // Removes the lock file and releases the lock (also done by the destructor).
  void release();

 private:
  std::string path_;
  std::string warning_;
  int fd_ = -1;
};

}  // namespace pairmd
