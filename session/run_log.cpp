#include "session/run_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "io/output_files.h"

namespace pairmd {

// Where the copies go: memory until the log is open, then the file. Each copy comes with the
// descriptor its text also went to (1 standard output, 2 standard error, -1 none), so that a
// log that is itself this command's standard output or error (a shell redirect) gets only the
// text that did not reach it already.
class RunLog::Sink {
 public:
  ~Sink() {
    if (file_) std::fclose(file_);
  }
  void write(int shown_on, const char* s, std::streamsize n) {
    if (file_) {
      if (!failed_ && std::fwrite(s, 1, static_cast<size_t>(n), file_) != static_cast<size_t>(n)) failed_ = true;
    } else if (stream_) {
      if (!(skip_ & bit(shown_on))) stream_->sputn(s, n);
    } else if (!held_.empty() && held_.back().first == shown_on) {
      held_.back().second.append(s, static_cast<size_t>(n));
    } else {
      held_.push_back({shown_on, std::string(s, static_cast<size_t>(n))});
    }
  }
  void flush() {
    if (file_ && std::fflush(file_) != 0) failed_ = true;
    if (stream_) stream_->pubsync();
  }
  // The log is a file of its own.
  void attach(std::FILE* f, const std::string& first) {
    file_ = f;
    release(first);
  }
  // The log is the file behind `stream`, which the descriptors in `skip` (bits 1, 2) write to
  // already.
  void attach(std::streambuf* stream, int skip, const std::string& first) {
    stream_ = stream;
    skip_ = skip;
    release(first);
  }

 private:
  static int bit(int fd) { return fd == 1 || fd == 2 ? fd : 0; }
  void release(const std::string& first) {
    write(-1, first.data(), static_cast<std::streamsize>(first.size()));
    for (const auto& [shown_on, text] : held_) write(shown_on, text.data(), static_cast<std::streamsize>(text.size()));
    held_.clear();
    flush();
  }
  std::FILE* file_ = nullptr;
  std::streambuf* stream_ = nullptr;
  int skip_ = 0;
  std::vector<std::pair<int, std::string>> held_;
  bool failed_ = false;  // a full disk must not stop the run over its log: the copy just ends
};

namespace {

// A stream buffer that passes everything to the terminal's buffer (if any; descriptor `fd`) and
// copies it to the sink.
class Tee final : public std::streambuf {
 public:
  Tee(std::streambuf* terminal, int fd, RunLog::Sink* sink) : terminal_(terminal), fd_(fd), sink_(sink) {}
  void set_terminal(std::streambuf* terminal) {
    terminal_ = terminal;
    if (!terminal) fd_ = -1;
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = static_cast<char>(c);
    if (terminal_) terminal_->sputc(ch);
    sink_->write(fd_, &ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (terminal_) terminal_->sputn(s, n);
    sink_->write(fd_, s, n);
    return n;
  }
  int sync() override {
    if (terminal_) terminal_->pubsync();
    sink_->flush();
    return 0;
  }

 private:
  std::streambuf* terminal_;
  int fd_;
  RunLog::Sink* sink_;
};

}  // namespace

// The standard streams of a process whose runs print from threads of their own (the replicas of
// an ensemble in one process, replicas/thread_communicator.h): std::cout and std::cerr pass each
// thread's text to that thread's log (its Tee), and text of a thread without one to the terminal.
// Installed by the first RunLog that copies the standard streams, removed by the last.
class StreamRouter final : public std::streambuf {
 public:
  std::streambuf* terminal = nullptr;
  static thread_local std::streambuf* out_target;
  static thread_local std::streambuf* err_target;
  explicit StreamRouter(bool is_out) : is_out_(is_out) {}

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    return target()->sputc(static_cast<char>(c));
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override { return target()->sputn(s, n); }
  int sync() override { return target()->pubsync(); }

 private:
  std::streambuf* target() const {
    std::streambuf* t = is_out_ ? out_target : err_target;
    return t ? t : terminal;
  }
  bool is_out_;
};
thread_local std::streambuf* StreamRouter::out_target = nullptr;
thread_local std::streambuf* StreamRouter::err_target = nullptr;

namespace {
std::mutex g_router_mutex;
int g_router_users = 0;
StreamRouter g_out_router(true), g_err_router(false);
}  // namespace

RunLog::RunLog(bool copy_std_streams, bool echo) : sink_(std::make_unique<Sink>()) {
  if (!copy_std_streams) {
    stdout_ = std::cout.rdbuf();
    stderr_ = std::cerr.rdbuf();
    out_ = std::make_unique<Tee>(echo ? stdout_ : nullptr, echo ? STDOUT_FILENO : -1, sink_.get());
    own_ = std::make_unique<std::ostream>(out_.get());
    return;
  }
  {
    std::lock_guard<std::mutex> l(g_router_mutex);
    if (g_router_users++ == 0) {
      g_out_router.terminal = std::cout.rdbuf();
      g_err_router.terminal = std::cerr.rdbuf();
      std::cout.rdbuf(&g_out_router);
      std::cerr.rdbuf(&g_err_router);
    }
    old_out_ = stdout_ = g_out_router.terminal;
    old_err_ = stderr_ = g_err_router.terminal;
  }
  out_ = std::make_unique<Tee>(old_out_, STDOUT_FILENO, sink_.get());
  err_ = std::make_unique<Tee>(old_err_, STDERR_FILENO, sink_.get());
  previous_out_ = StreamRouter::out_target;
  previous_err_ = StreamRouter::err_target;
  StreamRouter::out_target = out_.get();
  StreamRouter::err_target = err_.get();
}

void RunLog::quiet_stdout() {
  out().flush();
  static_cast<Tee*>(out_.get())->set_terminal(nullptr);
}

RunLog::~RunLog() {
  if (own_) {
    own_->flush();
  } else {
    std::cout.flush();
    std::cerr.flush();
    StreamRouter::out_target = previous_out_;
    StreamRouter::err_target = previous_err_;
    std::lock_guard<std::mutex> l(g_router_mutex);
    if (--g_router_users == 0) {
      std::cout.rdbuf(old_out_);
      std::cerr.rdbuf(old_err_);
    }
  }
  sink_->flush();
}

std::ostream& RunLog::out() { return own_ ? *own_ : std::cout; }

bool RunLog::open(const std::string& path, bool append, const std::string& command) {
  char when[64] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  const std::string line = std::string("# ") + when + " on " + host + ": " + command + "\n";
  path_ = path;
  out().flush();
  std::cerr.flush();
  // The log is this command's own standard output or error (`pairmd run ... > P.log`): the shell
  // writes it already. It is not opened a second time (two writers at two offsets would
  // overwrite each other); what does not reach it, it gets through that stream.
  if (const int streams = standard_streams_at(path)) {
    sink_->attach(streams & 1 ? stdout_ : stderr_, streams, line);
    return false;
  }
  // "x": created here or not at all (an existing file is never replaced, as every output); a
  // link is not followed.
  const bool existed = append && access(path.c_str(), F_OK) == 0;
  const int fd = append ? ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644)
                        : ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  std::FILE* f = fd >= 0 ? fdopen(fd, "a") : nullptr;
  if (!f) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot write the log '" + path + "': " + why);
  }
  sink_->attach(f, std::string(existed ? "\n" : "") + line);
  return !existed;
}

}  // namespace pairmd
