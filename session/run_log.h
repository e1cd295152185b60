// PREFIX.log: everything a run prints (the run's header, notes and warnings, the thermo table,
// the performance line, errors and how to continue an interrupted run), also in a file, so that
// a run in a batch job keeps its own record.
//
// `pairmd run` copies std::cout and std::cerr from the start of the command. A run in a process
// that is not its own (the Python module) leaves the standard streams alone and prints through
// out() instead, which writes to the log and, where asked, to std::cout too. Either way the text
// is held in memory until the run's outputs are opened (a run refused before that writes
// nothing, the log included); then the file is created (or, for a restart that continues its
// run's files, appended to) and written as the text comes. The progress line goes to std::clog
// and is not copied.
#pragma once

#include <cstdio>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

namespace pairmd {

class RunLog {
 public:
  // copy_std_streams: copy std::cout and std::cerr (the pairmd program). Otherwise out() is the
  // log's own stream, echoed to std::cout where `echo` says so.
  explicit RunLog(bool copy_std_streams = true, bool echo = true);
  ~RunLog();  // stops, flushes and closes the file
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  // Where the run prints: std::cout, or the log's own stream.
  std::ostream& out();

  // Creates `path` (which must not exist), or with `append` adds to it (a restart continuing its
  // files; a missing file is created), writes a line with the command and the time, and what
  // was printed so far. Returns whether it created the file. Throws std::runtime_error.
  // Where `path` is this command's own standard output or error (`pairmd run ... > P.log`), the
  // file is not opened again: the text printed on that stream is in it already, and the line
  // with the command and what goes to the other stream are written through it, so the file
  // holds what a log holds, in order (returns false: the shell created it).
  bool open(const std::string& path, bool append, const std::string& command);
  const std::string& path() const { return path_; }
  // From now on out() goes into the log only, not to the terminal (the replicas of an ensemble
  // other than the first: their tables would interleave). std::cerr still shows.
  void quiet_stdout();

  class Sink;

 private:
  std::unique_ptr<Sink> sink_;
  std::unique_ptr<std::streambuf> out_, err_;
  std::unique_ptr<std::ostream> own_;
  std::streambuf* previous_out_ = nullptr;  // this thread's log before this one (standard streams)
  std::streambuf* previous_err_ = nullptr;
  std::streambuf* old_out_ = nullptr;  // restored at the end (copy_std_streams)
  std::streambuf* old_err_ = nullptr;
  std::streambuf* stdout_ = nullptr;  // the terminal's buffers, where a log that is one of them goes
  std::streambuf* stderr_ = nullptr;
  std::string path_;
};

}  // namespace pairmd
