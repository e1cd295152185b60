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
  // Those of them that exist now (as any kind of file: a directory of that name counts).
  std::vector<std::string> existing() const;
  // Temporary files a killed run can leave: exactly the names pairmd gives them
  // (PREFIX.checkpoint.h5.tmp.PID, PREFIX.thermo.csv.tmp.PID, PREFIX.pull.csv.tmp.PID,
  // PREFIX.gsd.tmp.PID, PREFIX.pull.svg.tmp.PID; PID digits only), and only where they are
  // pairmd's: regular files (not links) of this user that are empty or begin as pairmd writes
  // that file (HDF5 or GSD signature, the CSV header, the SVG prolog). Only a run holding the
  // claim writes them, so once the claim is ours, any that exist are left over.
  std::vector<std::string> stale_temporaries() const;
};

// True when two prefixes name the same files ("run" and "./run").
bool same_prefix(const std::string& a, const std::string& b);

// True when both paths exist and are the same file (device and inode: links and other
// spellings of one path included).
bool same_file(const std::string& a, const std::string& b);

// The prefix of the run that owns `path`, or "" when none does: `path` (or, if it is a link,
// what it points to) is named as a file of a run with prefix P (P.h5, P.gsd, P.thermo.csv,
// P.checkpoint.h5, P.potential.dx, P.log, P.pull.csv, P.pull.svg, P.lock, a temporary of one of
// them, or an ensemble's P.walk.csv, P.walk.svg, P.exchange.csv), and P is a run's prefix: P.lock
// or P.checkpoint.h5 exists (for an ensemble's files, a replica's P.rNN.checkpoint.h5).
std::string owning_run(const std::string& path);

// Why a command must not write its output `path` (in words, after the path), or "" when it may:
// `path` is one of the command's `inputs` (the same file), a file a pairmd run owns
// (owning_run), or something other than a regular file (a directory, a device, a FIFO).
// A path that does not exist yet may be written.
std::string output_refusal(const std::string& path, const std::vector<std::string>& inputs);

// output_refusal as an error: throws std::invalid_argument "OPTION PATH <why>; nothing was
// written". Every command that writes files checks each of its outputs with it before it
// computes anything.
void require_output_path(const std::string& option, const std::string& path, const std::vector<std::string>& inputs);

// Whether `path` is this process's standard output (bit 1) or standard error (bit 2): the same
// file, as a shell redirect (`> P.log`, `2> P.log`) makes it. 0 when it is neither.
int standard_streams_at(const std::string& path);

// Creates `path` for writing, exclusively (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0644): an existing
// file, or a link of that name, is an error, never followed or truncated. Returns the descriptor;
// throws std::runtime_error naming the path.
int create_new_file(const std::string& path);
// create_new_file, then `text` written and the file closed; the file is removed again when
// writing fails. Throws std::runtime_error.
void write_new_file(const std::string& path, const std::string& text);

// Another process holds the claim on the prefix.
struct OutputInUse : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OutputClaim {
 public:
  // Claims `prefix`. Throws OutputInUse (naming the holder's process) when another process holds
  // it, std::runtime_error when the lock file cannot be created (missing directory, no
  // permission) or PREFIX.lock is not a regular file (a link is never followed: another user's
  // link in a shared directory must not make the run write where it points). Where the file
  // system cannot lock at all, the claim is taken without a lock and warning() says so.
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
