// The CPU code's thread count and wait policy (base/host_threads.h, cli/main.cpp): the choice
// from the affinity mask, the cgroup quota, OMP_NUM_THREADS and the system size, and the
// program's restart with passive waiting. Whether the default is fast on a busy machine is a
// timing and lives in docs/benchmarks.md ("CPU backend threads"); what decides it is tested here.
#include <gtest/gtest.h>
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "base/host_threads.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

TEST(HostThreads, TheAffinityMaskCappedByTheQuotaRoundedDown) {
  EXPECT_EQ(automatic_host_threads({2, 0}), 2);
  EXPECT_EQ(automatic_host_threads({16, 0}), 16);
  EXPECT_EQ(automatic_host_threads({16, 4}), 4);
  EXPECT_EQ(automatic_host_threads({16, 2.5}), 2);
  EXPECT_EQ(automatic_host_threads({16, 0.5}), 1);  // half a CPU: still one thread
  EXPECT_EQ(automatic_host_threads({2, 8}), 2);     // a quota above the mask changes nothing
  EXPECT_EQ(automatic_host_threads({0, 0}), 1);
}

TEST(HostThreads, CgroupQuotaFiles) {
  EXPECT_DOUBLE_EQ(cpu_quota_from_cgroup_v2("200000 100000"), 2.0);
  EXPECT_DOUBLE_EQ(cpu_quota_from_cgroup_v2("150000 100000\n"), 1.5);
  EXPECT_EQ(cpu_quota_from_cgroup_v2("max 100000"), 0);
  EXPECT_EQ(cpu_quota_from_cgroup_v2(""), 0);  // no such file
  EXPECT_EQ(cpu_quota_from_cgroup_v2("garbage"), 0);
  EXPECT_EQ(cpu_quota_from_cgroup_v2("100000 0"), 0);
  EXPECT_DOUBLE_EQ(cpu_quota_from_cgroup_v1("50000", "100000"), 0.5);
  EXPECT_DOUBLE_EQ(cpu_quota_from_cgroup_v1("400000", "100000"), 4.0);
  EXPECT_EQ(cpu_quota_from_cgroup_v1("-1", "100000"), 0);
  EXPECT_EQ(cpu_quota_from_cgroup_v1("", ""), 0);
}

// A cgroup tree as /sys/fs/cgroup holds it: the lowest quota on the process's path counts.
TEST(HostThreads, CgroupQuotaOfTheProcessesPath) {
  test::ScratchDir root("cgroup");
  std::filesystem::create_directories(root / "ci/job");
  test::write_text(root / "ci/cpu.max", "300000 100000\n");
  test::write_text(root / "ci/job/cpu.max", "max 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/ci/job\n", root.path), 3.0);  // the parent's
  test::write_text(root / "ci/job/cpu.max", "150000 100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/ci/job\n", root.path), 1.5);  // the lower
  EXPECT_EQ(cgroup_cpu_quota("0::/\n", root.path), 0);                 // none at the root
  EXPECT_EQ(cgroup_cpu_quota("", root.path), 0);
  // v1: the cpu controller's own hierarchy; a hybrid system lists the unified one too.
  std::filesystem::create_directories(root / "cpu,cpuacct/docker/abc");
  test::write_text(root / "cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n");
  test::write_text(root / "cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(cgroup_cpu_quota("0::/\n4:cpu,cpuacct:/docker/abc\n1:memory:/docker/abc\n", root.path), 2.0);
  test::write_text(root / "cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
  EXPECT_EQ(cgroup_cpu_quota("4:cpu,cpuacct:/docker/abc\n", root.path), 0);
}

TEST(HostThreads, ThisProcessesLimitsAreTheAffinityMask) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  const HostCpuLimits limits = read_host_cpu_limits();
  EXPECT_EQ(limits.affinity_cpus, CPU_COUNT(&mask));
  EXPECT_GE(limits.quota_cpus, 0);
}

// Sets (or, with nullopt, unsets) an environment variable for the scope; restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(HostThreads, OneThreadPerThousandParticlesUnlessSetOrPinned) {
  const int cpus = automatic_host_threads(read_host_cpu_limits());
  {
    ScopedEnv unset("OMP_NUM_THREADS", std::nullopt);
    EXPECT_EQ(host_threads_for_particles(0), 1);
    EXPECT_EQ(host_threads_for_particles(98), 1);  // the SOP worked example
    EXPECT_EQ(host_threads_for_particles(kParticlesPerThread - 1), 1);
    EXPECT_EQ(host_threads_for_particles(2 * kParticlesPerThread), std::min(cpus, 2));
    EXPECT_EQ(host_threads_for_particles(1000 * kParticlesPerThread), cpus);
    pin_host_threads(7);
    EXPECT_EQ(host_threads_for_particles(98), 7);
    pin_host_threads(0);
    EXPECT_EQ(host_threads_for_particles(98), 1);
  }
  {
    // OMP_NUM_THREADS is the user's count, for any size (OpenMP read it when it started).
    ScopedEnv set("OMP_NUM_THREADS", "3");
    EXPECT_EQ(host_threads_for_particles(98), omp_get_max_threads());
  }
}

// ---- the pairmd program ------------------------------------------------------------------------

int own_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  return sched_getaffinity(0, sizeof(mask), &mask) == 0 ? CPU_COUNT(&mask) : 1;
}

// Runs `PREFIX pairmd ARGS` through the shell in `dir` with the OpenMP variables unset first (as
// where nobody set them; PREFIX may set some again); stdout and stderr together.
std::string run_unset(const std::string& prefix, const std::string& args, const std::string& dir) {
  const std::string out = dir + "/.out";
  const std::string cmd = "cd '" + dir + "' && env -u OMP_NUM_THREADS -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " +
                          "-u OMP_DISPLAY_ENV " + prefix + " '" + test::pairmd_binary() + "' " + args + " > '" + out +
                          "' 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << test::read_text(out);
  return test::read_text(out);
}

// libgomp's spin count as it shows it last (OMP_DISPLAY_ENV=verbose; the program shows it once
// per start), "" where the runtime shows none (not libgomp).
std::string last_spin_count(const std::string& out) {
  const std::string key = "GOMP_SPINCOUNT = '";
  const size_t at = out.rfind(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return out.substr(begin, out.find('\'', begin) - begin);
}

// Idle OpenMP threads spinning (libgomp: 300,000 turns at each meeting) made runs on busy cores
// many times slower than one thread; the program runs with OMP_WAIT_POLICY=passive unless the
// user set a policy or a spin count.
TEST(HostThreadsProgram, IdleThreadsSleepUnlessTheUserSetsAPolicy) {
  if (own_cpus() < 2) GTEST_SKIP() << "one CPU: one thread, nothing waits";
  test::ScratchDir dir("threads");
  const std::string passive = run_unset("OMP_DISPLAY_ENV=verbose", "--version", dir.path);
  if (last_spin_count(passive).empty()) GTEST_SKIP() << "not libgomp: its spin count is not shown";
  EXPECT_EQ(last_spin_count(passive), "0") << passive;
  EXPECT_NE(passive.find("idle threads wait: OMP_WAIT_POLICY=passive"), std::string::npos) << passive;

  const std::string active = run_unset("OMP_DISPLAY_ENV=verbose OMP_WAIT_POLICY=active", "--version", dir.path);
  EXPECT_NE(last_spin_count(active), "0") << active;
  EXPECT_NE(active.find("idle threads wait: OMP_WAIT_POLICY=active"), std::string::npos) << active;

  const std::string spin = run_unset("OMP_DISPLAY_ENV=verbose GOMP_SPINCOUNT=1000", "--version", dir.path);
  EXPECT_EQ(last_spin_count(spin), "1000") << spin;
}

TEST(HostThreadsProgram, TheAffinityMaskAndOmpNumThreadsSetTheCount) {
  test::ScratchDir dir("threads");
  const std::string all = run_unset("", "--version", dir.path);
  EXPECT_NE(all.find("cpu threads: up to " + std::to_string(automatic_host_threads(read_host_cpu_limits()))),
            std::string::npos)
      << all;
  const std::string set = run_unset("OMP_NUM_THREADS=3", "--version", dir.path);
  EXPECT_NE(set.find("cpu threads: 3 OpenMP thread(s) (OMP_NUM_THREADS)"), std::string::npos) << set;
  if (std::system("taskset -c 0 true > /dev/null 2>&1") != 0) GTEST_SKIP() << "no taskset (util-linux)";
  const std::string one = run_unset("taskset -c 0", "--version", dir.path);
  EXPECT_NE(one.find("cpu threads: up to 1 OpenMP thread(s): 1 CPU(s) in the affinity mask"), std::string::npos) << one;
  EXPECT_NE(one.find("idle threads wait: no thread waits (one thread)"), std::string::npos) << one;
}

// The thread count a run took, from its performance line ("(N thread(s); ...").
int run_threads(const std::string& out) {
  const size_t at = out.find(" thread(s); seconds in lists");
  const size_t open = out.rfind('(', at);
  if (at == std::string::npos || open == std::string::npos) return -1;
  return std::atoi(out.c_str() + open + 1);
}

TEST(HostThreadsProgram, SmallSystemsRunOnOneThreadUnlessOmpNumThreadsSaysOtherwise) {
  test::ScratchDir dir("threads");
  test::write_text(dir / "small.yaml", test::small_lj_config(20));  // 256 particles
  const std::string small = run_unset("", "run small.yaml --backend cpu --output a", dir.path);
  EXPECT_EQ(run_threads(small), 1) << small;
  const std::string asked = run_unset("OMP_NUM_THREADS=2", "run small.yaml --backend cpu --output b", dir.path);
  EXPECT_EQ(run_threads(asked), 2) << asked;
  if (own_cpus() < 2) return;
  const std::string large =
      run_unset("", "run small.yaml --backend cpu --output c --set system.lattice.cells=8", dir.path);  // 2,048
  EXPECT_EQ(run_threads(large), 2) << large;
}

}  // namespace
}  // namespace pairmd
