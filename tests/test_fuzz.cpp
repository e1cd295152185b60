// Fuzz-style robustness: hundreds of mutated YAML configs for `pairmd check`, and truncated or
// bit-flipped HDF5 files given to system.file and to --restart. The program must never die
// of a signal or hang; it succeeds or exits with an error message.
#include <gtest/gtest.h>

#include <random>

#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;

std::string mutate(const std::string& base, std::mt19937_64& rng) {
  static const std::vector<std::string> tokens = {":",
                                                  "-",
                                                  "[",
                                                  "]",
                                                  "{",
                                                  "}",
                                                  ",",
                                                  " ",
                                                  "\n",
                                                  "#",
                                                  "&a",
                                                  "*a",
                                                  "!!str",
                                                  "|",
                                                  ">",
                                                  "\"",
                                                  "'",
                                                  "0",
                                                  "-1",
                                                  "1e308",
                                                  "-1e308",
                                                  ".nan",
                                                  ".inf",
                                                  "1e-300",
                                                  "9999999999999999999",
                                                  "null",
                                                  "~",
                                                  "true",
                                                  "yes",
                                                  "\t",
                                                  "@",
                                                  "cells",
                                                  "density",
                                                  "potential",
                                                  "types",
                                                  "lattice",
                                                  "file",
                                                  "chains",
                                                  "steps",
                                                  "dt",
                                                  "cutoff",
                                                  "mass",
                                                  "2147483648",
                                                  "[1, 2]",
                                                  "{a: 1}",
                                                  "\xff\xfe",
                                                  "%YAML 1.2\n---\n",
                                                  "...",
                                                  "? ",
                                                  "<<: *a"};
  std::string s = base;
  std::uniform_int_distribution<int> nops(1, 4);
  const int n = nops(rng);
  for (int k = 0; k < n && !s.empty(); ++k) {
    std::uniform_int_distribution<size_t> pos(0, s.size() - 1);
    const size_t p = pos(rng);
    switch (rng() % 7) {
      case 0:
        s.erase(p, 1 + rng() % 8);
        break;  // delete characters
      case 1:
        s.insert(p, tokens[rng() % tokens.size()]);
        break;  // insert a token
      case 2:
        if (p + 1 < s.size()) std::swap(s[p], s[p + 1]);
        break;  // swap neighbours
      case 3:
        s[p] = static_cast<char>(rng() % 256);
        break;   // any byte
      case 4: {  // delete a line
        const size_t a = s.rfind('\n', p), b = s.find('\n', p);
        s.erase(a == std::string::npos ? 0 : a,
                (b == std::string::npos ? s.size() : b) - (a == std::string::npos ? 0 : a));
        break;
      }
      case 5: {  // duplicate a line
        const size_t a = s.rfind('\n', p), b = s.find('\n', p);
        const size_t from = a == std::string::npos ? 0 : a;
        s.insert(from, s.substr(from, (b == std::string::npos ? s.size() : b) - from));
        break;
      }
      default: {  // replace a number
        const size_t d = s.find_first_of("0123456789", p);
        if (d == std::string::npos) break;
        const size_t e = s.find_first_not_of("0123456789.e-", d);
        s.replace(d, (e == std::string::npos ? s.size() : e) - d, tokens[rng() % 8 + 16]);
      }
    }
  }
  return s;
}

void expect_clean_exit(const test::ChildResult& r, const std::string& what, std::initializer_list<int> allowed) {
  EXPECT_FALSE(r.timed_out) << what << ": hung";
  EXPECT_EQ(r.signal, 0) << what << ": killed by signal " << r.signal << "\n" << r.err;
  bool ok = false;
  for (int a : allowed) ok = ok || r.exit_code == a;
  EXPECT_TRUE(ok) << what << ": exit code " << r.exit_code << "\n" << r.err;
  if (r.exit_code != 0) EXPECT_FALSE(r.err.empty()) << what << ": failed without a message";
}

TEST(Fuzz, MutatedConfigsNeverCrashCheck) {
  ScratchDir dir;
  std::string base = test::read_text(PAIRMD_SOURCE_DIR "/configs/lj_liquid.yaml");
  ASSERT_FALSE(base.empty());
  // 4 x 4 x 4 cells: a mutation that multiplies a digit still builds in well under a second.
  const size_t cells = base.find("cells: 10");
  ASSERT_NE(cells, std::string::npos);
  base.replace(cells, 9, "cells: 4");
  std::mt19937_64 rng(20260406);
  int counts[3] = {0, 0, 0};
  int refused_for_memory = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < 400; ++k) {
    const std::string text = mutate(base, rng);
    test::write_text(dir / "m.yaml", text);
    // A mutation may ask for a huge lattice. Under a 2 GiB address-space limit, the memory
    // estimate must refuse it (exit 2, with the estimate) before anything is allocated: an
    // allocation failure (exit 1) would mean the estimate let through what does not fit.
    const test::ChildResult r = test::run_pairmd({"check", "m.yaml"}, dir.path, 20, 0, 2L << 30);
    expect_clean_exit(r, "mutation " + std::to_string(k) + ":\n" + text, {0, 2});
    if (r.exit_code >= 0 && r.exit_code <= 2) ++counts[r.exit_code];
    if (r.err.find("of host memory") != std::string::npos) ++refused_for_memory;
    if (HasFailure()) break;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ fuzz ] 400 mutated configs: " << counts[0] << " valid, " << counts[2] << " rejected (exit 2; "
            << refused_for_memory << " of them for memory), " << secs << " s\n";
  EXPECT_GT(counts[2], 100);  // the mutations do reach the validation
}

TEST(Fuzz, DamagedHdf5FilesAreErrorsNotCrashes) {
  ScratchDir dir;
  test::write_text(dir / "src.yaml", test::small_lj_config(200, "{every: 100, velocities_every: 100}", 100));
  const test::ChildResult made = test::run_pairmd({"run", "src.yaml", "--backend", "cpu"}, dir.path);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string traj = test::read_text(dir / "src.h5"), ck = test::read_text(dir / "src.checkpoint.h5");
  ASSERT_GT(traj.size(), 10000u);
  test::write_text(dir / "from_file.yaml",
                   "units: lj\nsteps: 5\nsystem:\n  types: [{name: A, mass: 1.0}]\n  file: {path: bad.h5}\n"
                   "force_field:\n  pair:\n    - potential: lj\n      cutoff: 2.5\n"
                   "      coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]\n"
                   "integrator: {kind: langevin, dt: 0.005, temperature: 1.2, seed: 11}\noutput: {progress: off}\n");
  std::mt19937_64 rng(7);
  auto damage = [&](const std::string& src, int k) {
    std::string b = src;
    if (k % 3 == 0) return b.substr(0, rng() % b.size());
    const int flips = 1 << (rng() % 5);
    for (int i = 0; i < flips; ++i) {
      // Mostly the metadata near the start (superblock, object headers, B-trees).
      const size_t p = (rng() % 3 != 0) ? rng() % std::min<size_t>(b.size(), 8192) : rng() % b.size();
      b[p] = static_cast<char>(b[p] ^ static_cast<char>(1 + rng() % 255));  // always a change
    }
    return b;
  };
  int rejected = 0;
  for (int k = 0; k < 150; ++k) {
    test::write_text(dir / "bad.h5", damage(traj, k));
    const test::ChildResult r = test::run_pairmd({"check", "from_file.yaml"}, dir.path, 60);
    expect_clean_exit(r, "damaged trajectory " + std::to_string(k), {0, 2});
    rejected += r.exit_code == 2;
    if (HasFailure()) break;
  }
  EXPECT_GT(rejected, 20);
  for (int k = 0; k < 40; ++k) {
    test::write_text(dir / "bad.checkpoint.h5", damage(ck, k));
    const test::ChildResult r = test::run_pairmd(
        {"run", "src.yaml", "--backend", "cpu", "--output", "re", "--restart", "bad.checkpoint.h5", "--steps", "210"},
        dir.path, 60);
    expect_clean_exit(r, "damaged checkpoint " + std::to_string(k), {2});
    EXPECT_NE(r.err.find("bad.checkpoint.h5"), std::string::npos) << r.err;
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace pairmd
