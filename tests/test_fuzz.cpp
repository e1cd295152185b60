// Fuzz-style robustness: hundreds of mutated YAML configs for `pairmd check`, and truncated or
// bit-flipped HDF5 files given to system.file and to --restart. The program must never die
// of a signal or hang; it succeeds or exits with an error message.
//
// And the readers themselves (ReadersSurviveMutatedFiles): the YAML config, LAMMPS data, XYZ,
// GSD, H5MD and checkpoint readers get thousands of files mutated from valid seeds, each read in
// a child process under an address-space limit and a time limit. None may crash, hang, run out
// of memory (std::bad_alloc: a size used before it was checked), throw anything but the
// reader's own error, print a message that is empty or holds raw control bytes, or accept a
// state a run cannot start from (non-finite values, positions outside a periodic box, bonds of
// a particle with itself). Text seeds get lines deleted, duplicated (sections), swapped, cut,
// hostile numbers, CR LF and control bytes; binary seeds bytes flipped, ranges duplicated or
// zeroed, huge words; GSD and H5MD files are also written whole with hostile shapes and values,
// checkpoints resealed with a valid checksum.
//   PAIRMD_FUZZ_CASES=N    cases per reader (CI: 400, about 30 s in all)
//   PAIRMD_FUZZ_SEED=S     the generator's seed (CI: 20260407)
//   PAIRMD_FUZZ_SECONDS=T  the time limit of one case (CI: 20 s)
// Failing cases are kept in the scratch directory (PAIRMD_KEEP_TEST_FILES=1 keeps it).
#include <gsd/gsd.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <functional>
#include <map>
#include <random>

#include "base/text.h"
#include "engine/start_file.h"
#include "io/checkpoint.h"
#include "io/hdf5_util.h"
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

// ---- the readers, in-process ----------------------------------------------------------------

long env_number(const char* name, long def) {
  const char* v = std::getenv(name);
  return v && *v ? std::atol(v) : def;
}

// The values that break readers: huge, tiny, non-finite, at the edges of integer types.
const std::vector<std::string>& hostile_numbers() {
  static const std::vector<std::string> n = {"1e308",
                                             "-1e308",
                                             "1e309",
                                             "nan",
                                             "-nan",
                                             "inf",
                                             "-inf",
                                             "1e-320",
                                             "0",
                                             "-0",
                                             "-1",
                                             "1e12",
                                             "1e13",
                                             "2147483647",
                                             "2147483648",
                                             "-2147483649",
                                             "4294967295",
                                             "4294967296",
                                             "1073741824",
                                             "1073741825",
                                             "9223372036854775807",
                                             "9223372036854775808",
                                             "18446744073709551616",
                                             "1000000000000",
                                             "0x10",
                                             "1e",
                                             "--1",
                                             "1.5.2"};
  return n;
}

// A text file mutated: bytes changed, lines deleted, duplicated (sections too), swapped, numbers
// replaced by hostile ones, the file cut, CR LF line ends, control bytes.
std::string mutate_text(const std::string& base, std::mt19937_64& rng) {
  std::string s = base;
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : static_cast<size_t>(rng() % n); };
  const int ops = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < ops && !s.empty(); ++k) {
    const size_t p = pick(s.size());
    const size_t a = s.rfind('\n', p) == std::string::npos ? 0 : s.rfind('\n', p) + 1;
    const size_t b = s.find('\n', p) == std::string::npos ? s.size() : s.find('\n', p) + 1;
    switch (rng() % 9) {
      case 0:  // a byte
        s[p] = static_cast<char>(rng() % 256);
        break;
      case 1:  // cut
        s.resize(p);
        break;
      case 2:  // delete lines
        s.erase(a, std::min(s.size(), b + pick(200)) - a);
        break;
      case 3: {  // duplicate a block of lines (a section, or part of one)
        size_t e = b;
        for (size_t n = pick(12); n > 0 && e < s.size(); --n) e = std::min(s.size(), s.find('\n', e) + 1);
        s.insert(a, s.substr(a, e - a));
        break;
      }
      case 4: {  // a number replaced by a hostile one
        const size_t d = s.find_first_of("0123456789", p);
        if (d == std::string::npos) break;
        const size_t e = s.find_first_not_of("0123456789.eE+-", d);
        s.replace(d, (e == std::string::npos ? s.size() : e) - d, hostile_numbers()[pick(hostile_numbers().size())]);
        break;
      }
      case 5:  // a hostile number inserted
        s.insert(p, " " + hostile_numbers()[pick(hostile_numbers().size())] + " ");
        break;
      case 6: {  // swap two lines
        const size_t q = pick(s.size());
        const size_t c = s.rfind('\n', q) == std::string::npos ? 0 : s.rfind('\n', q) + 1;
        const size_t d = s.find('\n', q) == std::string::npos ? s.size() : s.find('\n', q) + 1;
        if (d <= a || c >= b) {
          const std::string x = s.substr(a, b - a), y = s.substr(c, d - c);
          if (c > a)
            s.replace(c, d - c, x), s.replace(a, b - a, y);
          else
            s.replace(a, b - a, y), s.replace(c, d - c, x);
        }
        break;
      }
      case 7: {  // CR LF line ends
        std::string out;
        for (char c : s) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
        s = out;
        break;
      }
      default:  // control and non-UTF-8 bytes
        s.insert(p, std::string("\x1b[2J\x00\x07\xff", 7));
    }
  }
  return s;
}

// A binary file mutated: bytes flipped (mostly near the start, where headers and indexes are),
// the file cut, a range duplicated or zeroed, 8-byte words made huge.
std::string mutate_binary(const std::string& base, std::mt19937_64& rng) {
  std::string s = base;
  auto pick = [&](size_t n) { return n == 0 ? size_t(0) : static_cast<size_t>(rng() % n); };
  const int ops = 1 + static_cast<int>(rng() % 6);
  for (int k = 0; k < ops && !s.empty(); ++k) {
    const size_t p = rng() % 3 ? pick(std::min<size_t>(s.size(), 8192)) : pick(s.size());
    switch (rng() % 6) {
      case 0:
      case 1:
        s[p] = static_cast<char>(s[p] ^ static_cast<char>(1 + rng() % 255));
        break;
      case 2:
        s.resize(p);
        break;
      case 3: {
        const size_t n = std::min(s.size() - p, 1 + pick(256));
        s.insert(p, s.substr(p, n));
        break;
      }
      case 4: {
        const uint64_t huge[] = {~0ull, 1ull << 30, (1ull << 30) + 1, 1ull << 32, 1ull << 62, 0x7ff8000000000000ull};
        const uint64_t v = huge[pick(6)];
        s.replace(p, std::min<size_t>(8, s.size() - p), std::string(reinterpret_cast<const char*>(&v), 8));
        break;
      }
      default:
        std::fill(s.begin() + p, s.begin() + std::min(s.size(), p + 1 + pick(64)), '\0');
    }
  }
  return s;
}

float hostile_float(std::mt19937_64& rng) {
  const float v[] = {0.f, -1.f, 1.f, 2.5f, NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 3e38f, 1e-40f, 7.f};
  return v[rng() % 12];
}

uint32_t hostile_count(std::mt19937_64& rng, uint32_t n) {
  const uint32_t v[] = {0, 1, 2, n, n, n, n + 1, 1u << 30, (1u << 30) + 1, 4294967295u};
  return v[rng() % 10];
}

// A GSD file written chunk by chunk with hostile values where the dice say so.
void write_hostile_gsd(const std::string& path, std::mt19937_64& rng) {
  gsd_handle h{};
  std::remove(path.c_str());
  if (gsd_create_and_open(&h, path.c_str(), "fuzz", rng() % 8 ? "hoomd" : "other", gsd_make_version(1, 4),
                          GSD_OPEN_APPEND, 0) != GSD_SUCCESS)
    return;
  const int frames = 1 + static_cast<int>(rng() % 3);
  for (int f = 0; f < frames; ++f) {
    const uint32_t n = 1 + static_cast<uint32_t>(rng() % 6);
    const uint32_t rows = rng() % 4 ? n : hostile_count(rng, n) % 64;
    auto floats = [&](uint32_t count, bool hostile) {
      std::vector<float> v(count);
      for (float& x : v) x = hostile && rng() % 3 == 0 ? hostile_float(rng) : static_cast<float>(rng() % 100) * 0.1f;
      return v;
    };
    const uint32_t N = rng() % 5 ? n : hostile_count(rng, n);
    if (rng() % 8) gsd_write_chunk(&h, "particles/N", GSD_TYPE_UINT32, 1, 1, 0, &N);
    std::vector<float> box = {10, 10, 10, 0, 0, 0};
    for (float& b : box)
      if (rng() % 6 == 0) b = hostile_float(rng);
    if (rng() % 6) gsd_write_chunk(&h, "configuration/box", GSD_TYPE_FLOAT, 6, 1, 0, box.data());
    const uint8_t dims = rng() % 10 ? 3 : 2;
    gsd_write_chunk(&h, "configuration/dimensions", GSD_TYPE_UINT8, 1, 1, 0, &dims);
    const bool hostile = rng() % 2;
    if (rng() % 6)
      gsd_write_chunk(&h, "particles/position", GSD_TYPE_FLOAT, rows, 3, 0, floats(3 * rows, hostile).data());
    if (rng() % 2)
      gsd_write_chunk(&h, "particles/velocity", GSD_TYPE_FLOAT, rows, 3, 0, floats(3 * rows, hostile).data());
    if (rng() % 2) gsd_write_chunk(&h, "particles/mass", GSD_TYPE_FLOAT, rows, 1, 0, floats(rows, hostile).data());
    if (rng() % 2) gsd_write_chunk(&h, "particles/charge", GSD_TYPE_FLOAT, rows, 1, 0, floats(rows, hostile).data());
    std::vector<uint32_t> typeid_(rows);
    for (uint32_t& t : typeid_) t = rng() % 5 ? static_cast<uint32_t>(rng() % 2) : hostile_count(rng, 2);
    if (rng() % 2) gsd_write_chunk(&h, "particles/typeid", GSD_TYPE_UINT32, rows, 1, 0, typeid_.data());
    const char names[8] = {'M', 0, 0, 0, 'C', 0, 0, 0};
    if (rng() % 2) gsd_write_chunk(&h, "particles/types", GSD_TYPE_INT8, 1 + rng() % 2, 4, 0, names);
    std::vector<int32_t> image(3 * rows);
    for (int32_t& i : image) i = rng() % 6 ? static_cast<int32_t>(rng() % 3) - 1 : 2147483647;
    if (rng() % 3 == 0) gsd_write_chunk(&h, "particles/image", GSD_TYPE_INT32, rows, 3, 0, image.data());
    const uint32_t nb = static_cast<uint32_t>(rng() % 4);
    std::vector<uint32_t> group(2 * nb);
    for (uint32_t& g : group) g = rng() % 6 ? static_cast<uint32_t>(rng() % n) : hostile_count(rng, n);
    if (rng() % 2) {
      const uint32_t NB = rng() % 5 ? nb : hostile_count(rng, nb);
      gsd_write_chunk(&h, "bonds/N", GSD_TYPE_UINT32, 1, 1, 0, &NB);
      if (nb > 0 && rng() % 5) gsd_write_chunk(&h, "bonds/group", GSD_TYPE_UINT32, nb, 2, 0, group.data());
    }
    gsd_end_frame(&h);
  }
  gsd_close(&h);
}

// An H5MD file of hostile shapes and values where the dice say so (positions chunked, so that
// a huge shape is a small file).
void write_hostile_h5md(const std::string& path, std::mt19937_64& rng) {
  h5::LibraryLock lock(h5::library_mutex());
  h5::quiet();
  h5::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  if (!f.valid()) return;
  const hsize_t shapes[] = {0, 1, 2, 5, 1ull << 30, (1ull << 30) + 1, 1ull << 31, 1ull << 40};
  const hsize_t frames = rng() % 4 ? 1 + rng() % 3 : shapes[rng() % 8];
  const hsize_t n = rng() % 3 ? 1 + rng() % 5 : shapes[rng() % 8];
  const hsize_t cols = rng() % 8 ? 3 : rng() % 5;
  h5::Handle g = h5::create_group(f, "particles/all/position");
  const hsize_t dims[3] = {frames, n, cols},
                chunk[3] = {1, std::max<hsize_t>(1, std::min<hsize_t>(n, 64)), std::max<hsize_t>(1, cols)};
  const hsize_t maxdims[3] = {H5S_UNLIMITED, H5S_UNLIMITED, H5S_UNLIMITED};
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_chunk(dcpl, 3, chunk);
  h5::Handle space(H5Screate_simple(3, dims, maxdims));
  h5::Handle d(H5Dcreate2(g, "value", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
  if (static_cast<double>(frames) * n * cols <= 60) {
    std::vector<double> x(frames * n * cols);
    const double bad[] = {NAN, INFINITY, 1e300, -1e13, 1e12};
    for (double& v : x) v = rng() % 6 ? static_cast<double>(rng() % 100) * 0.1 : bad[rng() % 5];
    if (!x.empty()) H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, x.data());
  }
  // Steps and times: as many as frames, or another count; written where small, else a chunked
  // dataset of that shape with nothing stored.
  const hsize_t nsteps = rng() % 5 ? frames : shapes[rng() % 8];
  for (const char* name : {"step", "time"}) {
    if (rng() % 5 == 0) continue;
    const bool step = name[0] == 's';
    if (nsteps > 4096) {
      h5::Handle props(H5Pcreate(H5P_DATASET_CREATE));
      const hsize_t one = 1024, max = H5S_UNLIMITED;
      H5Pset_chunk(props, 1, &one);
      h5::Handle sp(H5Screate_simple(1, &nsteps, &max));
      h5::Handle ds(H5Dcreate2(g, name, step ? H5T_STD_I64LE : H5T_IEEE_F64LE, sp, H5P_DEFAULT, props, H5P_DEFAULT));
      continue;
    }
    std::vector<int64_t> steps(nsteps);
    for (hsize_t k = 0; k < nsteps; ++k) steps[k] = rng() % 6 ? static_cast<int64_t>(k) : INT64_MIN;
    std::vector<double> times(nsteps, rng() % 6 ? 0.0 : NAN);
    if (step)
      h5::write_dataset(g, name, H5T_STD_I64LE, H5T_NATIVE_INT64, {nsteps}, steps.data());
    else
      h5::write_dataset(g, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {nsteps}, times.data());
  }
  double edges[9] = {10, 0, 0, 0, 10, 0, 0, 0, 10};
  for (double& e : edges)
    if (rng() % 8 == 0) e = rng() % 2 ? static_cast<double>(hostile_float(rng)) : 1e300;
  if (rng() % 6)
    h5::write_dataset(f, "particles/all/box/edges", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                      rng() % 2 ? std::vector<hsize_t>{3} : std::vector<hsize_t>{3, 3}, edges);
  const hsize_t nb = rng() % 4 ? rng() % 4 : shapes[rng() % 8] % 100000;
  std::vector<int32_t> bonds(2 * nb);
  for (int32_t& b : bonds) b = rng() % 5 ? static_cast<int32_t>(rng() % 6) : -1 - static_cast<int32_t>(rng() % 3);
  if (rng() % 3 == 0)
    h5::write_dataset(f, "connectivity/bonds", H5T_STD_I32LE, H5T_NATIVE_INT32, {nb, 2}, bonds.data());
  if (n <= 8 && rng() % 3 == 0) {
    std::vector<int32_t> species(n, static_cast<int32_t>(rng() % 3) - 1);
    h5::write_dataset(f, "particles/all/species", H5T_STD_I32LE, H5T_NATIVE_INT32, {n}, species.data());
  }
}

// The trailer io/checkpoint.cpp ends a checkpoint with: magic, length, FNV-1a 64 of the bytes.
std::string checkpoint_trailer(const std::string& payload) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : payload) h = (h ^ c) * 1099511628211ull;
  std::string t = "PMDCKPT1";
  for (const uint64_t v : {static_cast<uint64_t>(payload.size()), h})
    for (int k = 0; k < 8; ++k) t += static_cast<char>(v >> (8 * k));
  return t;
}

// One reader and its seeds.
struct FuzzTarget {
  std::string name, ext;
  bool binary = false;
  std::vector<std::string> seeds;
  std::function<void(const std::string& path, std::mt19937_64& rng)> generate;  // a structured case (optional)
  std::function<void(const std::string& path)> read;  // throws the reader's own error on bad input
  std::function<bool(const std::exception& e)> own_error;
  unsigned generate_one_in = 3;  // the share of cases `generate` writes
};

enum class Outcome { Accepted, Refused, EmptyMessage, RawBytes, OutOfMemory, OtherException, Crashed, Hung };

const char* outcome_name(Outcome o) {
  const char* n[] = {"accepted",       "refused",           "empty message", "raw bytes in the message",
                     "std::bad_alloc", "another exception", "crashed",       "hung"};
  return n[static_cast<int>(o)];
}

// Reads `path` in a child under `memory` bytes of address space and `seconds`; what it threw
// comes back in `message`.
Outcome read_in_child(const FuzzTarget& t, const std::string& path, long memory, int seconds, std::string* message) {
  int fds[2];
  if (pipe(fds) != 0) return Outcome::Crashed;
  const pid_t pid = fork();
  if (pid == 0) {
    ::close(fds[0]);
    struct rlimit rl {
      static_cast<rlim_t>(memory), static_cast<rlim_t>(memory)
    };
    setrlimit(RLIMIT_AS, &rl);
    alarm(static_cast<unsigned>(seconds));
    Outcome o = Outcome::Accepted;
    std::string what;
    try {
      t.read(path);
    } catch (const std::bad_alloc& e) {
      o = Outcome::OutOfMemory;
    } catch (const std::exception& e) {
      what = e.what();
      o = !t.own_error(e) ? Outcome::OtherException : what.empty() ? Outcome::EmptyMessage : Outcome::Refused;
      // The reading child of the H5MD and checkpoint readers passes on what it caught as text.
      if (what.find("bad_alloc") != std::string::npos) o = Outcome::OutOfMemory;
      if (what.find("std::") != std::string::npos || what.find("_M_") != std::string::npos) o = Outcome::OtherException;
      for (char c : what)
        if (o == Outcome::Refused && (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)) o = Outcome::RawBytes;
    }
    what = what.substr(0, 4000);
    if (::write(fds[1], what.data(), what.size()) < 0) _exit(100);
    _exit(static_cast<int>(o));
  }
  ::close(fds[1]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  char buf[4096];
  const ssize_t got = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  *message = got > 0 ? std::string(buf, static_cast<size_t>(got)) : "";
  if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGALRM ? Outcome::Hung : Outcome::Crashed;
  return WIFEXITED(status) && WEXITSTATUS(status) <= 7 ? static_cast<Outcome>(WEXITSTATUS(status)) : Outcome::Crashed;
}

// This process's address space now (the children's limit is this plus what a reader may use).
long address_space_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmSize:", 0) == 0) return 1024L * std::atol(line.c_str() + 7);
  return 0;
}

const char* kFuzzSystem = R"(units: lj
system:
  types: [{name: M, mass: 1.0, charge: -1.0}, {name: C, mass: 1.0, charge: 1.0}]
  SOURCE
force_field:
  exclusions: bonds
  bonds: [{name: spring, potential: harmonic, k: 100.0, r0: 1.0}]
  angles: [{name: bend, potential: harmonic, k: 10.0, theta0: 110.0}]
  dihedrals: [{name: twist, potential: harmonic, k: 1.0, d: 1, n: 2}]
  pair:
    - potential: wca
      mixing: geometric
      coeffs: [{type: M, epsilon: 1.0, sigma: 1.0}, {type: C, epsilon: 1.0, sigma: 1.0}]
    - {potential: debye_huckel, cutoff: 6.0, bjerrum_length: 2.0, debye_length: 3.0}
integrator: {kind: langevin, dt: 0.005, temperature: 1.0, friction: 1.0, seed: 21}
)";

std::string fuzz_config(const std::string& source) {
  std::string s = kFuzzSystem;
  s.replace(s.find("SOURCE"), 6, source);
  return s;
}

const char* kLammpsSeed = R"(LAMMPS data file via write_data, version 2 Aug 2023, timestep = 1000, units = lj

4 atoms
2 atom types
2 bonds
1 bond types
2 angles
1 angle types
1 dihedrals
1 dihedral types

0.0 20.0 xlo xhi
-10.0 10.0 ylo yhi
0.0 20.0 zlo zhi
0.0 0.0 0.0 xy xz yz

Masses

1 1.0
2 1.5

Pair Coeffs # lj/cut

1 1.0 1.0
2 1.0 1.0

Angle Coeffs # harmonic

1 10.0 110.0

Dihedral Coeffs # harmonic

1 1.0 1 2

Atoms # full

1 1 1 -1.0 1.0 1.0 1.0 0 0 0
2 1 1 -1.0 2.0 1.0 1.0 0 0 0
3 2 2 1.0 5.0 5.0 5.0 0 0 0
4 2 2 1.0 25.0 -12.0 5.0 1 0 -1

Velocities

1 0.1 0.2 0.3
2 0.0 0.0 0.0
3 -0.1 0.0 0.0
4 0.0 0.1 0.0

Bonds

1 1 1 2
2 1 3 4

Angles

1 1 1 2 3
2 1 2 3 4

Dihedrals

1 1 1 2 3 4
)";

const char* kLammpsLabelSeed = R"(written by OVITO

3 atoms
2 atom types
1 bonds
1 bond types

20.0 0.0 0.0 avec
0.0 20.0 0.0 bvec
0.0 0.0 20.0 cvec
-10.0 -10.0 -10.0 abc origin

Atom Type Labels

1 C
2 M

Bond Type Labels

1 spring

Atoms # atomic

1 M 1.0 1.0 1.0
2 M 2.0 1.0 1.0
3 C 5.0 5.0 5.0

Bonds

1 spring 1 2
)";

const char* kXyzSeed =
    "3\nLattice=\"20 0 0 0 20 0 0 0 20\" Origin=\"-10 -10 -10\" "
    "Properties=species:S:1:pos:R:3:vel:R:3:id:I:1 Time=0.0\n"
    "M 1.0 1.0 1.0 0.1 0.0 0.0 1\nM 2.0 1.0 1.0 0.0 0.1 0.0 2\nC 5.0 5.0 5.0 0.0 0.0 0.1 3\n"
    "3\nLattice=\"20 0 0 0 20 0 0 0 20\"\nM 1.5 1.0 1.0\nM 2.5 1.0 1.0\nC 5.5 5.0 5.0\n";

const char* kPlainXyzSeed = "2\ncomment\nM 1 1 1\nC 3 3 3\n";

// The seeds pairmd writes itself: a trajectory (H5MD, GSD) and a checkpoint of a small system of
// charged chains with counterions.
void write_run_seeds(const test::ScratchDir& dir) {
  test::write_text(
      dir / "seed.yaml",
      fuzz_config(
          "chains: {count: 4, length: 5, density: 0.01, bond: spring, angle: bend, dihedral: twist, monomer_type: M, "
          "charged_every: 2, counterion_type: C, seed: 9}") +
          "steps: 100\noutput: {progress: off, checkpoint_every: 100, trajectory: {every: 50, "
          "velocities_every: 50}, gsd: {every: 50, velocities: true, flush_seconds: 0}}\n");
  const test::ChildResult r = test::run_pairmd({"run", "seed.yaml", "--backend", "cpu"}, dir.path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// What a reader accepted must be a state a run can start from: throws std::logic_error (not a
// reader's error: the case fails) naming what is not.
void check_accepted(const SystemState& s, const Topology& topology) {
  auto bad = [](const std::string& what) { throw std::logic_error("accepted " + what); };
  const Box& b = s.box;
  for (const double v : {b.L.x, b.L.y, b.L.z})
    if (!(std::isfinite(v) && v > 0 && v <= kMaxCoordinate)) bad("a box edge " + std::to_string(v));
  if (s.step < 0) bad("step " + std::to_string(s.step));
  for (size_t i = 0; i < s.size(); ++i) {
    const Vec3d x = s.position[i], v = s.velocity[i];
    for (const double c : {x.x, x.y, x.z, v.x, v.y, v.z, s.mass[i], s.charge[i]})
      if (!std::isfinite(c)) bad("a non-finite value of particle " + std::to_string(i));
    const double lo[3] = {b.lo.x, b.lo.y, b.lo.z}, len[3] = {b.L.x, b.L.y, b.L.z}, c[3] = {x.x, x.y, x.z};
    for (int d = 0; d < 3; ++d)
      if (b.periodic ? !(c[d] >= lo[d] && c[d] < lo[d] + len[d]) : std::fabs(c[d]) > kMaxCoordinate)
        bad("particle " + std::to_string(i) + " outside the box");
    if (!(s.mass[i] > 0)) bad("mass " + std::to_string(s.mass[i]));
    if (s.type[i] < 0 || s.type[i] >= static_cast<int>(s.type_names.size())) bad("type " + std::to_string(s.type[i]));
  }
  for (const Bond& bond : topology.bonds)
    if (bond.i < 0 || bond.j < 0 || bond.i == bond.j || static_cast<size_t>(std::max(bond.i, bond.j)) >= s.size())
      bad("bond (" + std::to_string(bond.i) + ", " + std::to_string(bond.j) + ")");
  // Angles, dihedrals, impropers: particles of the system, each named once, a type >= 0.
  auto check_term = [&](const char* what, std::vector<int> p, int type) {
    bool ok = type >= 0;
    for (size_t a = 0; a < p.size(); ++a) {
      ok = ok && p[a] >= 0 && static_cast<size_t>(p[a]) < s.size();
      for (size_t b = 0; b < a; ++b) ok = ok && p[a] != p[b];
    }
    if (!ok) bad(std::string("an invalid ") + what);
  };
  for (const Angle& a : topology.angles) check_term("angle", {a.i, a.j, a.k}, a.type);
  for (const Dihedral& d : topology.dihedrals) check_term("dihedral", {d.i, d.j, d.k, d.l}, d.type);
  for (const Dihedral& d : topology.impropers) check_term("improper", {d.i, d.j, d.k, d.l}, d.type);
}

std::vector<FuzzTarget> fuzz_targets(const test::ScratchDir& dir) {
  auto config_error = [](const std::exception& e) { return dynamic_cast<const ConfigError*>(&e) != nullptr; };
  auto start_file = [&](const std::string& ext) {
    auto cfg = std::make_shared<RunConfig>(
        parse_config(fuzz_config("file: {path: '" + (dir / ("case." + ext)) + "', box: [30, 30, 30]}"), "fuzz.yaml"));
    return [cfg](const std::string&) {
      const StartStructure out = load_start_file(*cfg);
      check_accepted(out.state, out.topology);
    };
  };
  std::vector<FuzzTarget> t;
  FuzzTarget yaml{"yaml", "yaml", false, {}, nullptr, nullptr, config_error};
  for (const char* c : {"lj_liquid", "kremer_grest", "polyelectrolyte", "lj_tempering"})
    yaml.seeds.push_back(test::read_text(std::string(PAIRMD_SOURCE_DIR) + "/configs/" + c + ".yaml"));
  yaml.seeds.push_back(
      fuzz_config("file: {path: start.data, atom_style: full}") +
      "pulling: {mode: ramp, pulled: 3, "
      "tethered: 0, spring: 1.0, speed: 0.01}\nanalysis: {potential_map: {every: 10, spacing: 1.0}}\n");
  yaml.read = [](const std::string& path) {
    static const std::vector<std::string> sets = {"steps=1e3", "system.types.0.mass=2", "force_field.pair.0.cutoff=3"};
    const std::string text = test::read_text(path);
    parse_config(text, "fuzz.yaml", {sets[text.size() % sets.size()]});
  };
  t.push_back(yaml);
  t.push_back({"lammps", "data", false, {kLammpsSeed, kLammpsLabelSeed}, nullptr, start_file("data"), config_error});
  t.push_back({"xyz", "xyz", false, {kXyzSeed, kPlainXyzSeed}, nullptr, start_file("xyz"), config_error});
  t.push_back(
      {"gsd", "gsd", true, {test::read_text(dir / "seed.gsd")}, write_hostile_gsd, start_file("gsd"), config_error});
  t.push_back(
      {"h5md", "h5", true, {test::read_text(dir / "seed.h5")}, write_hostile_h5md, start_file("h5"), config_error});
  // A checkpoint's checksum refuses any changed byte; past it, the HDF5 inside is read: its
  // mutations get a fresh trailer (three cases in four).
  const std::string checkpoint = test::read_text(dir / "seed.checkpoint.h5");
  auto resealed = [payload = checkpoint.substr(0, checkpoint.size() - 24)](const std::string& path,
                                                                           std::mt19937_64& rng) {
    std::string b = mutate_binary(payload, rng);
    if (rng() % 4 != 0) b += checkpoint_trailer(b);
    test::write_text(path, b);
  };
  FuzzTarget ck{"checkpoint", "checkpoint.h5", true, {checkpoint}, resealed, nullptr, nullptr, 1};
  ck.read = [](const std::string& path) {
    const Checkpoint c = read_checkpoint(path);
    check_accepted(c.state, c.topology);
  };
  ck.own_error = [](const std::exception& e) { return dynamic_cast<const std::runtime_error*>(&e) != nullptr; };
  t.push_back(ck);
  return t;
}

// Writes case k of `t`: a structured file of hostile values (a third of the cases, where the
// target has a generator), else a seed mutated.
void write_case(const FuzzTarget& t, const std::string& path, std::mt19937_64& rng) {
  if (t.generate && rng() % t.generate_one_in == 0) {
    t.generate(path, rng);
    if (t.binary && rng() % 2) test::write_text(path, mutate_binary(test::read_text(path), rng));
    return;
  }
  const std::string& seed = t.seeds[rng() % t.seeds.size()];
  test::write_text(path, t.binary ? mutate_binary(seed, rng) : mutate_text(seed, rng));
}

TEST(Fuzz, ReadersSurviveMutatedFiles) {
  test::ScratchDir dir("fuzz");
  write_run_seeds(dir);
  if (HasFatalFailure()) return;
  const long cases = env_number("PAIRMD_FUZZ_CASES", 400);
  const int seconds = static_cast<int>(env_number("PAIRMD_FUZZ_SECONDS", 20));
  const uint64_t seed = static_cast<uint64_t>(env_number("PAIRMD_FUZZ_SEED", 20260407));
  // What the test process holds already, and 1 GiB for a reader: sizes read from a file that
  // are not checked before they are allocated run into it.
  const long memory = address_space_bytes() + (1L << 30);
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, std::map<Outcome, long>> counts;
  for (const FuzzTarget& t : fuzz_targets(dir)) {
    std::mt19937_64 rng(seed ^ std::hash<std::string>()(t.name));
    const std::string path = dir / ("case." + t.ext);
    long failures = 0;  // of this reader: a few are enough to go on with
    for (long k = 0; k < cases; ++k) {
      write_case(t, path, rng);
      std::string message;
      const Outcome o = read_in_child(t, path, memory, seconds, &message);
      ++counts[t.name][o];
      if (o == Outcome::Accepted || o == Outcome::Refused) continue;
      ++failures;
      const std::string kept = dir / ("fail." + t.name + "." + std::to_string(k) + "." + t.ext);
      std::rename(path.c_str(), kept.c_str());
      ADD_FAILURE() << t.name << " case " << k << " (seed " << seed << "): " << outcome_name(o) << ": "
                    << printable(message, 400) << "\n  the file: " << kept;
      if (failures >= 5) break;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ fuzz ] readers, " << cases << " cases each (seed " << seed << "), " << secs << " s:";
  for (const auto& [name, c] : counts) {
    std::cout << "\n  " << name << ":";
    for (const auto& [o, n] : c) std::cout << " " << n << " " << outcome_name(o);
  }
  std::cout << "\n";
  // The mutations reach both sides of each reader.
  for (const auto& [name, c] : counts) {
    EXPECT_GT(c.count(Outcome::Refused) ? c.at(Outcome::Refused) : 0, cases / 10) << name;
    EXPECT_GT(c.count(Outcome::Accepted) ? c.at(Outcome::Accepted) : 0, 0) << name;
  }
}

}  // namespace
}  // namespace pairmd
