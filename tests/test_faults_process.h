// Helpers for tests that run the real `pairmd` binary as a child process: start it, signal it,
// wait with a timeout, read what it printed; scratch directories and small config files.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace pairmd::testing {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline bool file_exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// A fresh directory under /tmp, removed at destruction.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    char tmpl[] = "/tmp/pairmd_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() {
    if (!std::getenv("PAIRMD_KEEP_TEST_FILES")) std::system(("rm -rf '" + path + "'").c_str());
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

struct ChildResult {
  int exit_code = -1;   // when exited
  int signal = 0;       // when killed by a signal
  bool timed_out = false;
  std::string out, err;
};

// A running `pairmd` (or any program): argv[0] is the program path.
class Child {
 public:
  // `file_size_limit` > 0: RLIMIT_FSIZE in bytes (a full disk, as the process sees it).
  // `memory_limit` > 0: RLIMIT_AS in bytes. `env`: "NAME=value" entries set in the child.
  Child(const std::vector<std::string>& argv, const std::string& dir, long file_size_limit = 0, long memory_limit = 0,
        const std::vector<std::string>& env = {})
      : out_path_(dir + "/child." + std::to_string(counter()) + ".out"), err_path_(out_path_ + ".err") {
    pid_ = fork();
    if (pid_ == 0) {
      const int o = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int in = open("/dev/null", O_RDONLY);
      dup2(o, 1);
      dup2(e, 2);
      dup2(in, 0);
      if (chdir(dir.c_str()) != 0) _exit(126);
      if (file_size_limit > 0) {
        struct rlimit rl{static_cast<rlim_t>(file_size_limit), static_cast<rlim_t>(file_size_limit)};
        setrlimit(RLIMIT_FSIZE, &rl);
      }
      if (memory_limit > 0) {
        struct rlimit rl{static_cast<rlim_t>(memory_limit), static_cast<rlim_t>(memory_limit)};
        setrlimit(RLIMIT_AS, &rl);
      }
      setenv("OMP_NUM_THREADS", "1", 1);
      for (const std::string& e : env) {
        const size_t eq = e.find('=');
        setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
      }
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !done_) {
      kill(pid_, SIGKILL);
      wait(1.0);
    }
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) { kill(pid_, sig); }
  std::string out() const { return read_text(out_path_); }
  std::string err() const { return read_text(err_path_); }
  // Whether the child has ended (it is reaped by wait()).
  bool running() const { return kill(pid_, 0) == 0 && !exited(); }

  ChildResult wait(double timeout_s) {
    ChildResult r;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    int status = 0;
    for (;;) {
      const pid_t w = waitpid(pid_, &status, WNOHANG);
      if (w == pid_) break;
      if (std::chrono::steady_clock::now() > until) {
        r.timed_out = true;
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    done_ = true;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    r.out = read_text(out_path_);
    r.err = read_text(err_path_);
    return r;
  }

 private:
  static int counter() {
    static int n = 0;
    return n++;
  }
  bool exited() const {
    // A child that has exited but is not yet reaped is a zombie: /proc says state Z.
    const std::string stat = read_text("/proc/" + std::to_string(pid_) + "/stat");
    const size_t close = stat.rfind(')');
    return close == std::string::npos || (close + 2 < stat.size() && stat[close + 2] == 'Z');
  }
  pid_t pid_ = -1;
  bool done_ = false;
  std::string out_path_, err_path_;
};

inline ChildResult run_pairmd(const std::vector<std::string>& args, const std::string& dir, double timeout_s = 120,
                              long file_size_limit = 0, long memory_limit = 0, const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv{PAIRMD_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  Child c(argv, dir, file_size_limit, memory_limit, env);
  return c.wait(timeout_s);
}

// A small LJ liquid (256 particles) with a trajectory, thermo and checkpoints; `extra` is
// appended to the output section's trajectory mapping.
inline std::string small_lj_config(int64_t steps, const std::string& trajectory = "{every: 100, velocities_every: 100, observables_every: 50, flush_seconds: 0.2}",
                                   int64_t checkpoint_every = 200) {
  std::ostringstream s;
  s << "title: small LJ liquid\nunits: lj\nsteps: " << steps << "\n"
    << "system:\n  types: [{name: A, mass: 1.0}]\n  lattice: {kind: fcc, cells: 4, density: 0.8442}\n"
    << "force_field:\n  pair:\n    - potential: lj\n      cutoff: 2.5\n      coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]\n"
    << "integrator: {kind: langevin, dt: 0.005, temperature: 1.2, friction: 1.0, seed: 11}\n"
    << "output:\n  thermo_every: 50\n  progress: off\n  checkpoint_every: " << checkpoint_every
    << "\n  trajectory: " << trajectory << "\n";
  return s.str();
}

}  // namespace pairmd::testing
