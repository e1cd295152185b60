#include "session/run_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <iostream>
#include <stdexcept>

namespace pairmd {

// Where the copies go: memory until the file is open, then the file.
class RunLog::Sink {
 public:
  ~Sink() {
    if (file_) std::fclose(file_);
  }
  void write(const char* s, std::streamsize n) {
    if (file_) {
      if (!failed_ && std::fwrite(s, 1, static_cast<size_t>(n), file_) != static_cast<size_t>(n)) failed_ = true;
    } else {
      held_.append(s, static_cast<size_t>(n));
    }
  }
  void flush() {
    if (file_ && std::fflush(file_) != 0) failed_ = true;
  }
  void attach(std::FILE* f, const std::string& first) {
    file_ = f;
    write(first.data(), static_cast<std::streamsize>(first.size()));
    write(held_.data(), static_cast<std::streamsize>(held_.size()));
    held_.clear();
    flush();
  }

 private:
  std::FILE* file_ = nullptr;
  std::string held_;
  bool failed_ = false;  // a full disk must not stop the run over its log: the copy just ends
};

namespace {

// A stream buffer that passes everything to the terminal's buffer (if any) and copies it to the sink.
class Tee final : public std::streambuf {
 public:
  Tee(std::streambuf* terminal, RunLog::Sink* sink) : terminal_(terminal), sink_(sink) {}

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = static_cast<char>(c);
    if (terminal_) terminal_->sputc(ch);
    sink_->write(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (terminal_) terminal_->sputn(s, n);
    sink_->write(s, n);
    return n;
  }
  int sync() override {
    if (terminal_) terminal_->pubsync();
    sink_->flush();
    return 0;
  }

 private:
  std::streambuf* terminal_;
  RunLog::Sink* sink_;

 public:
  void set_terminal(std::streambuf* terminal) { terminal_ = terminal; }
};

}  // namespace

RunLog::RunLog(bool copy_std_streams, bool echo) : sink_(std::make_unique<Sink>()) {
  if (!copy_std_streams) {
    out_ = std::make_unique<Tee>(echo ? std::cout.rdbuf() : nullptr, sink_.get());
    own_ = std::make_unique<std::ostream>(out_.get());
    return;
  }
  old_out_ = std::cout.rdbuf();
  old_err_ = std::cerr.rdbuf();
  out_ = std::make_unique<Tee>(old_out_, sink_.get());
  err_ = std::make_unique<Tee>(old_err_, sink_.get());
  std::cout.rdbuf(out_.get());
  std::cerr.rdbuf(err_.get());
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
    std::cout.rdbuf(old_out_);
    std::cerr.rdbuf(old_err_);
  }
  sink_->flush();
}

std::ostream& RunLog::out() { return own_ ? *own_ : std::cout; }

bool RunLog::open(const std::string& path, bool append, const std::string& command) {
  // "x": created here or not at all (an existing file is never replaced, as every output).
  const bool existed = append && access(path.c_str(), F_OK) == 0;
  std::FILE* f = std::fopen(path.c_str(), append ? "a" : "wx");
  if (!f) throw std::runtime_error("cannot write the log '" + path + "': " + std::strerror(errno));
  char when[64] = "";
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  const std::string first = std::string(existed ? "\n" : "") + "# " + when + " on " + host + ": " + command + "\n";
  path_ = path;
  out().flush();
  std::cerr.flush();
  sink_->attach(f, first);
  return !existed;
}

}  // namespace pairmd
