// Hostile input (issue #29): configs and start files made to hang, exhaust memory or mislead.
// Each is refused at once with exit 2 and a message that says what and where: YAML aliases that
// expand without end; sizes that cannot be held, checked before they are allocated; non-finite
// and huge values; and messages that name the right source, escape what they echo and print
// numbers in a readable form.
#include <gsd/gsd.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <regex>

#include "io/dx_writer.h"
#include "io/hdf5_util.h"
#include "replicas/walk.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

constexpr long kMemoryLimit = 2L << 30;  // RLIMIT_AS of the children that must not allocate

const char* kBase = R"(units: lj
steps: 10
system:
  types: [{name: A, mass: 1.0}]
  lattice: {kind: fcc, cells: 4, density: 0.8442}
force_field:
  pair:
    - potential: lj
      cutoff: 2.5
      coeffs: [{types: [A, A], epsilon: 1.0, sigma: 1.0}]
integrator: {kind: langevin, dt: 0.005, temperature: 1.2, seed: 11}
)";

// kBase starting from `file` (line 5 column 16: system.file.path), with `boundary`.
std::string from_file(const std::string& file, const std::string& boundary = "periodic") {
  std::string s = kBase;
  const std::string lattice = "  lattice: {kind: fcc, cells: 4, density: 0.8442}\n";
  s.replace(s.find(lattice), lattice.size(), "  file: {path: " + file + "}\n  boundary: " + boundary + "\n");
  return s;
}

// `pairmd ARGS` in `dir` under the memory limit: exit 2 and a message matching `expected`.
void expect_refused(const test::ScratchDir& dir, const std::vector<std::string>& args, const std::string& expected,
                    double timeout_s = 60) {
  const test::ChildResult r = test::run_pairmd(args, dir.path, timeout_s, 0, kMemoryLimit);
  EXPECT_FALSE(r.timed_out) << args[0] << " " << args[1] << ": did not finish in " << timeout_s << " s";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(expected))) << "expected /" << expected << "/, got '" << r.err << "'";
}

// `pairmd check cfg.yaml` of kBase starting from `file` is refused with `expected`.
void expect_start_refused(const test::ScratchDir& dir, const std::string& file, const std::string& expected,
                          const std::string& boundary = "periodic") {
  test::write_text(dir / "cfg.yaml", from_file(file, boundary));
  expect_refused(dir, {"check", "cfg.yaml"}, "^cfg\\.yaml:5:16: system\\.file\\.path: " + expected);
}

// A GSD frame of `n` particles (the count alone when `position` is empty).
void write_gsd(const std::string& path, uint32_t n, const std::vector<float>& position,
               const std::function<void(gsd_handle&)>& more = nullptr) {
  gsd_handle h{};
  ASSERT_EQ(gsd_create_and_open(&h, path.c_str(), "test", "hoomd", gsd_make_version(1, 4), GSD_OPEN_APPEND, 0),
            GSD_SUCCESS);
  const float box[6] = {10, 10, 10, 0, 0, 0};
  gsd_write_chunk(&h, "configuration/box", GSD_TYPE_FLOAT, 6, 1, 0, box);
  gsd_write_chunk(&h, "particles/N", GSD_TYPE_UINT32, 1, 1, 0, &n);
  if (!position.empty())
    gsd_write_chunk(&h, "particles/position", GSD_TYPE_FLOAT, position.size() / 3, 3, 0, position.data());
  if (more) more(h);
  gsd_end_frame(&h);
  gsd_close(&h);
}

// An H5MD frame whose position dataset is [1, n, 3] (chunked: nothing stored, so any n is a
// small file), in a box of edge 10; `dcpl` the dataset's creation properties (filters).
void write_h5md(const std::string& path, hsize_t n, const std::vector<double>& values = {}, hid_t dcpl = H5P_DEFAULT) {
  h5::LibraryLock lock(h5::library_mutex());
  h5::Handle f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_TRUE(f.valid());
  h5::Handle g = h5::create_group(f, "particles/all/position");
  const hsize_t dims[3] = {1, n, 3}, chunk[3] = {1, std::min<hsize_t>(n, 1024), 3};
  h5::Handle props(dcpl == H5P_DEFAULT ? H5Pcreate(H5P_DATASET_CREATE) : H5Pcopy(dcpl));
  H5Pset_chunk(props, 3, chunk);
  h5::Handle space(H5Screate_simple(3, dims, nullptr));
  h5::Handle d(H5Dcreate2(g, "value", H5T_IEEE_F64LE, space, H5P_DEFAULT, props, H5P_DEFAULT));
  ASSERT_TRUE(d.valid());
  if (!values.empty()) ASSERT_GE(H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), 0);
  const int64_t step = 0;
  const double time = 0, box[3] = {10, 10, 10};
  h5::write_dataset(f, "particles/all/position/step", H5T_STD_I64LE, H5T_NATIVE_INT64, {1}, &step);
  h5::write_dataset(f, "particles/all/position/time", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {1}, &time);
  h5::write_dataset(f, "particles/all/box/edges", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, {3}, box);
}

const std::string kLammpsBox = "0 10 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n\n";

// ---- item 9: YAML aliases -------------------------------------------------------------------

// Nine levels of nine aliases each: 387 million leaves from a file of 500 bytes.
TEST(HostileInput, YamlAliasBombIsRefusedAtOnce) {
  test::ScratchDir dir("hostile");
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  test::write_text(dir / "bomb.yaml", bomb + kBase);
  const auto t0 = std::chrono::steady_clock::now();
  expect_refused(dir, {"check", "bomb.yaml"},
                 R"(^bomb\.yaml:7:1: a6: YAML aliases \(\*name\) expand the document past [0-9]+ nodes)", 20);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  // The same through --set.
  test::write_text(dir / "cfg.yaml", kBase);
  std::string value = "[&b0 [x, x, x, x, x, x, x, x, x, x]";
  for (int i = 1; i < 9; ++i) {
    value += ", &b" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) value += (k ? ", *b" : "*b") + std::to_string(i - 1);
    value += "]";
  }
  expect_refused(dir, {"check", "cfg.yaml", "--set", "title=" + value + "]"},
                 R"(^--set title=.*: YAML aliases \(\*name\) expand the value past [0-9]+ nodes)", 20);
}

// ---- item 10: sizes checked before they are allocated ---------------------------------------

TEST(HostileInput, LammpsTypeCountsAreCheckedBeforeTheTablesAreMade) {
  test::ScratchDir dir("hostile");
  const std::string atoms = "Atoms # atomic\n\n1 1 1 1 1\n2 1 2 2 2\n";
  test::write_text(dir / "s.data", "t\n\n2 atoms\n1000000000000 atom types\n\n" + kLammpsBox + atoms);
  expect_start_refused(dir, "s.data",
                       R"(s\.data:4: 1000000000000 atom types, more than the 1073741824 pairmd can hold)");
  test::write_text(dir / "s.data",
                   "t\n\n2 atoms\n1 atom types\n1 bonds\n1000000000000 bond types\n\n" + kLammpsBox + atoms);
  expect_start_refused(dir, "s.data",
                       R"(s\.data:6: 1000000000000 bond types, more than the 1073741824 pairmd can hold)");
  // As many as pairmd can count, but not in the memory there is.
  test::write_text(dir / "s.data", "t\n\n2 atoms\n1073741824 atom types\n\n" + kLammpsBox + atoms);
  expect_start_refused(dir, "s.data",
                       R"(s\.data:4: 1073741824 atom types need about [0-9.]+ GiB of memory, but only [0-9.]+ [GM]iB )"
                       R"(can be had here \(the address-space limit, ulimit -v\))");
}

TEST(HostileInput, GsdParticleCountIsCheckedBeforeItIsAllocated) {
  test::ScratchDir dir("hostile");
  for (uint32_t n : {4294967295u, 1073741825u}) {
    write_gsd(dir / "s.gsd", n, {});
    expect_start_refused(
        dir, "s.gsd",
        "'s\\.gsd': particles/N: " + std::to_string(n) + " particles, more than the 1073741824 pairmd can hold");
  }
  write_gsd(dir / "s.gsd", 1073741824u, {});
  expect_start_refused(
      dir, "s.gsd",
      R"('s\.gsd': particles/N: 1073741824 particles need about [0-9.]+ GiB of memory, but only [0-9.]+ )"
      R"([GM]iB )");
}

TEST(HostileInput, H5mdShapesAreCheckedBeforeTheyAreAllocated) {
  test::ScratchDir dir("hostile");
  write_h5md(dir / "s.h5", (hsize_t(1) << 30) + 1);
  expect_start_refused(
      dir, "s.h5",
      R"('s\.h5': particles/all/position: 1073741825 particles, more than the 1073741824 pairmd can hold)");
  write_h5md(dir / "s.h5", hsize_t(1) << 30);
  expect_start_refused(dir, "s.h5",
                       R"('s\.h5': particles/all/position: 1073741824 particles need about [0-9.]+ GiB of memory, but )"
                       R"(only [0-9.]+ [GM]iB )");
}

// A protein of `residues` C-alpha atoms along a line, 3.8 A apart.
std::string chain_pdb(int residues) {
  std::string pdb;
  for (int i = 0; i < residues; ++i) {
    char line[100];
    std::snprintf(line, sizeof line, "ATOM  %5d  CA  ALA A%4d    %8.3f%8.3f%8.3f  1.00  0.00           C\n", i + 1,
                  i + 1, 3.8 * i, 0.0, 0.0);
    pdb += line;
  }
  return pdb + "END\n";
}

TEST(HostileInput, SopBuildCopiesAreCheckedBeforeTheModelIsBuilt) {
  test::ScratchDir dir("hostile");
  test::write_text(dir / "p.pdb", chain_pdb(12));
  expect_refused(dir, {"sop-build", "p.pdb", "-o", "p.yaml", "--copies", "100000000"},
                 R"(^pairmd sop-build: --copies 100000000 of 12 beads: 1200000000 beads, more than the 1073741824 )"
                 R"(pairmd can hold)");
  test::write_text(dir / "q.pdb", chain_pdb(3));
  expect_refused(
      dir, {"sop-build", "q.pdb", "-o", "q.yaml", "--copies", "100000000"},
      R"(^pairmd sop-build: --copies 100000000 of 3 beads: 300000000 beads need about [0-9.]+ GiB of memory, )"
      R"(but only )");
  EXPECT_FALSE(test::file_exists(dir / "q.yaml"));
}

TEST(HostileInput, PotentialMapLatticeIsCheckedAgainstMemoryBeforeItIsAllocated) {
  test::ScratchDir dir("hostile");
  std::string cfg = kBase;
  test::write_text(dir / "t.yaml", cfg + "output: {trajectory: {every: 5}}\n");
  const test::ChildResult made = test::run_pairmd({"run", "t.yaml", "--backend", "cpu"}, dir.path);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // 612^3 = 2.3e8 points: under the 2^30 limit, but several GiB.
  expect_refused(dir, {"potential-map", "t.h5", "--units", "lj", "--spacing", "0.011"},
                 R"(^pairmd potential-map: .*a lattice of 612 x 612 x 612: 229220928 points need about [0-9.]+ GiB of )"
                 R"(memory, but only [0-9.]+ [GM]iB can be had here)");
}

// ---- item 12: non-finite and huge values ----------------------------------------------------

TEST(HostileInput, NonFiniteValuesAreRefusedNamingFileAndParticle) {
  test::ScratchDir dir("hostile");
  // Open boundaries do not wrap: the NaN must still be found.
  write_gsd(dir / "s.gsd", 2, {1, 1, 1, NAN, 2, 2});
  for (const char* boundary : {"open", "periodic"})
    expect_start_refused(dir, "s.gsd", R"('s\.gsd': frame 0, particle 1: the position \(nan, 2, 2\) is not finite)",
                         boundary);
  write_h5md(dir / "s.h5", 2, {1, 1, 1, 2, INFINITY, 2});
  for (const char* boundary : {"open", "periodic"})
    expect_start_refused(dir, "s.h5", R"('s\.h5': frame 0, particle 1: the position \(2, inf, 2\) is not finite)",
                         boundary);
  test::write_text(dir / "s.xyz", "2\n\nA 1 1 1\nA nan 2 2\n");
  expect_start_refused(dir, "s.xyz", R"(s\.xyz:4: x is 'nan', not a finite number)", "open");
  // `run` writes nothing: no checkpoint of a NaN start.
  test::write_text(dir / "cfg.yaml", from_file("s.gsd", "open"));
  const test::ChildResult r = test::run_pairmd({"run", "cfg.yaml", "--backend", "cpu"}, dir.path);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(test::file_exists(dir / "cfg.checkpoint.h5"));
}

// A negative step started a run whose checkpoints no restart took ("its run's first step is
// not before its step").
TEST(HostileInput, StepsAndTimesOfStartFilesAreChecked) {
  test::ScratchDir dir("hostile");
  write_h5md(dir / "s.h5", 1, {1, 1, 1});
  {
    h5::LibraryLock lock(h5::library_mutex());
    h5::Handle f(H5Fopen((dir / "s.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    h5::Handle d(H5Dopen2(f, "particles/all/position/step", H5P_DEFAULT));
    const int64_t step = -5;
    H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &step);
  }
  expect_start_refused(dir, "s.h5", R"('s\.h5': its step -5 is not one a run starts from \(0 to 2\^62\))");
  const uint64_t step = ~0ull;
  write_gsd(dir / "s.gsd", 1, {1, 1, 1},
            [&](gsd_handle& h) { gsd_write_chunk(&h, "configuration/step", GSD_TYPE_UINT64, 1, 1, 0, &step); });
  expect_start_refused(dir, "s.gsd", R"('s\.gsd': its step -1 is not one a run starts from)");
  const double time = NAN;
  write_gsd(dir / "s.gsd", 1, {1, 1, 1},
            [&](gsd_handle& h) { gsd_write_chunk(&h, "log/time", GSD_TYPE_DOUBLE, 1, 1, 0, &time); });
  expect_start_refused(dir, "s.gsd", R"('s\.gsd': its time nan is not finite)");
}

TEST(HostileInput, BoxesWithOverflowingEdgesAreRefused) {
  test::ScratchDir dir("hostile");
  const std::string atoms = "\nAtoms # atomic\n\n1 1 1 1 1\n2 1 2 2 2\n";
  test::write_text(dir / "s.data",
                   "t\n\n2 atoms\n1 atom types\n\n-1e308 1e308 xlo xhi\n0 10 ylo yhi\n0 10 zlo zhi\n" + atoms);
  expect_start_refused(
      dir, "s.data",
      R"(s\.data:6: xlo xhi: the box's bound -1e\+308 is beyond \+-1e\+12, the range pairmd takes for coordinates)");
  test::write_text(dir / "s.data",
                   "t\n\n2 atoms\n1 atom types\n\n0 10 xlo xhi\n0 10 ylo yhi\n0 1e13 zlo zhi\n" + atoms);
  expect_start_refused(
      dir, "s.data",
      R"(s\.data:8: zlo zhi: the box's bound 1e\+13 is beyond \+-1e\+12, the range pairmd takes for coordinates)");
  test::write_text(dir / "s.xyz", "1\nLattice=\"1e300 0 0 0 10 0 0 0 10\"\nA 1 1 1\n");
  expect_start_refused(
      dir, "s.xyz",
      R"(s\.xyz:2: Lattice=: the box's edge 1e\+300 is beyond \+-1e\+12, the range pairmd takes for coordinates)");
  write_h5md(dir / "s.h5", 1, {1, 1, 1});
  {
    h5::LibraryLock lock(h5::library_mutex());
    h5::Handle f(H5Fopen((dir / "s.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT));
    h5::Handle d(H5Dopen2(f, "particles/all/box/edges", H5P_DEFAULT));
    const double edges[3] = {10, 1e300, 10};
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, edges);
  }
  expect_start_refused(
      dir, "s.h5", R"('s\.h5': the box's edge 1e\+300 is beyond \+-1e\+12, the range pairmd takes for coordinates)");
}

TEST(HostileInput, HugeFiniteCoordinatesAreCalledWhatTheyAre) {
  test::ScratchDir dir("hostile");
  // Periodic: more than 10^6 box lengths outside, by how much.
  test::write_text(dir / "s.data",
                   "t\n\n2 atoms\n1 atom types\n\n" + kLammpsBox + "Atoms # atomic\n\n1 1 1 1 1\n2 1 2e300 2 2\n");
  expect_start_refused(
      dir, "s.data", R"(s\.data:13: x = 2e\+300 is outside the box \[0, 10\) by 2e\+300, more than 10\^6 box lengths)");
  // Open: beyond what a coordinate may be.
  test::write_text(dir / "s.xyz", "2\n\nA 1 1 1\nA 1e300 2 2\n");
  expect_start_refused(dir, "s.xyz",
                       R"(s\.xyz:4: x = 1e\+300 is beyond \+-1e\+12, the range pairmd takes for coordinates)", "open");
  write_gsd(dir / "s.gsd", 2, {1, 1, 1, 1e30f, 2, 2});
  expect_start_refused(
      dir, "s.gsd",
      R"('s\.gsd': frame 0, particle 1: x = 1e\+30 is beyond \+-1e\+12, the range pairmd takes for coordinates)",
      "open");
}

// ---- item 17: messages -----------------------------------------------------------------------

TEST(HostileInput, SetErrorsNameTheOverrideAndSayWhatIsWrong) {
  test::ScratchDir dir("hostile");
  test::write_text(dir / "cfg.yaml", kBase);
  expect_refused(dir, {"check", "cfg.yaml", "--set", "integrator={[a]: 1}"},
                 R"(^--set integrator=\{\[a\]: 1\}: integrator: expected a key name, got a list\n$)");
  expect_refused(dir, {"check", "cfg.yaml", "--set", "system.types.0.charge=x"},
                 R"(^--set system\.types\[0\]\.charge=x: system\.types\[0\]\.charge: expected a number, got 'x'\n$)");
  test::write_text(dir / "list.yaml", "- a\n- b\n");
  expect_refused(dir, {"check", "list.yaml", "--set", "steps=5"},
                 R"(^--set steps=5: the document is a list, not a mapping: it has no key 'steps'\n$)");
  test::write_text(dir / "scalar.yaml", "hello\n");
  expect_refused(dir, {"check", "scalar.yaml", "--set", "steps=5"},
                 R"(^--set steps=5: the document is 'hello', not a mapping: it has no key 'steps'\n$)");
  test::write_text(dir / "key.yaml", std::string(kBase) + "{[a]: 1}: 2\n");
  expect_refused(dir, {"check", "key.yaml"}, R"(^key\.yaml:12:1: expected a key name, got a mapping\n$)");
}

TEST(HostileInput, XyzPropertyColumnsAreBounded) {
  test::ScratchDir dir("hostile");
  test::write_text(dir / "s.xyz",
                   "1\nProperties=species:S:1:pos:R:3:junk:R:2147483647 Lattice=\"10 0 0 0 10 0 0 0 10\"\n"
                   "A 1 1 1\n");
  expect_start_refused(
      dir, "s.xyz",
      R"(s\.xyz:2: Properties=: the column count of property junk is '2147483647', not a whole number from 1 )"
      R"(to 1000)");
  test::write_text(dir / "s.xyz", "1\nProperties=species:S:1:pos:R:3x Lattice=\"10 0 0 0 10 0 0 0 10\"\nA 1 1 1\n");
  expect_start_refused(
      dir, "s.xyz",
      R"(s\.xyz:2: Properties=: the column count of property pos is '3x', not a whole number from 1 to 1000)");
}

TEST(HostileInput, CrlfTextIsReadAsText) {
  test::ScratchDir dir("hostile");
  auto crlf = [](std::string s) {
    std::string out;
    for (char c : s) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
    return out;
  };
  test::write_text(dir / "s.data",
                   crlf("t\n\n2 atoms\n1 atom types\n\n" + kLammpsBox + "Atoms # atomic\n\n1 1 1 1 1\n2 1 2 2 2\n"));
  test::write_text(dir / "s.xyz", crlf("2\nLattice=\"10 0 0 0 10 0 0 0 10\"\nA 1 1 1\nA 2 2 2\n"));
  for (const char* file : {"s.data", "s.xyz"}) {
    test::write_text(dir / "cfg.yaml", crlf(from_file(file)));
    const test::ChildResult r = test::run_pairmd({"check", "cfg.yaml"}, dir.path);
    EXPECT_EQ(r.exit_code, 0) << file << ": " << r.err;
  }
  // The walk of a replica ensemble, as pairmd demux reads it.
  test::write_text(dir / "e.walk.csv", crlf("step,exchange,r0,r1\n0,0,0,1\n10,1,1,0\n"));
  EXPECT_EQ(read_walk_csv(dir / "e.walk.csv").replicas(), 2);
  // A potential map, as place-ions reads it.
  Grid3 map = test::lattice({2, 2, 2}, {0, 0, 0}, {1, 1, 1});
  map.values.assign(map.size(), 1.5);
  map.unit = "kcal/mol/e";
  write_dx(dir / "m.dx", map, "map");
  test::write_text(dir / "m.dx", crlf(test::read_text(dir / "m.dx")));
  EXPECT_EQ(read_dx(dir / "m.dx").unit, "kcal/mol/e");
}

TEST(HostileInput, GarbageIsEchoedEscaped) {
  test::ScratchDir dir("hostile");
  test::write_text(dir / "s.data", std::string("t\n\n2 atoms\n\x1b[31mred\x01\xff 1 atom types\n"));
  expect_start_refused(dir, "s.data",
                       R"(s\.data:4: not a header line pairmd knows: '\\x1b\[31mred\\x01\\xff 1 atom types')");
  test::write_text(dir / "s.xyz", std::string("\x00\x01\x1b[2J", 6) + std::string(500, 'z') + "\n");
  test::write_text(dir / "cfg.yaml", from_file("s.xyz"));
  const test::ChildResult r = test::run_pairmd({"check", "cfg.yaml"}, dir.path);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(R"(got '\x00\x01\x1b[2Jzzz)"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 300u) << "the echo is not cut short: " << r.err.size() << " bytes";
  for (char c : r.err) EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << "raw byte " << int(c) << " in " << r.err;
}

TEST(HostileInput, EmptyOrUnreadableStructureFilesSaySo) {
  test::ScratchDir dir("hostile");
  test::write_text(dir / "e.pdb", "");
  expect_refused(dir, {"sop-build", "e.pdb", "-o", "e.yaml"}, R"(^pairmd sop-build: e\.pdb: the file is empty\n$)");
  std::filesystem::create_directory(dir / "d.pdb");
  expect_refused(dir, {"sop-build", "d.pdb", "-o", "e.yaml"},
                 R"(^pairmd sop-build: d\.pdb: it is a directory, not a structure file\n$)");
}

TEST(HostileInput, HugeNumbersArePrintedShort) {
  test::ScratchDir dir("hostile");
  test::write_text(dir / "cfg.yaml", kBase);
  const test::ChildResult r = test::run_pairmd({"run", "cfg.yaml", "--backend", "cpu", "--steps", "0", "--set",
                                                "system.velocities.temperature=1e300", "--set", "output.progress=off"},
                                               dir.path);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("000000000000000000000"), std::string::npos) << r.out;
  // T, PE and KE of the thermo line: exponents where decimals would run past their columns.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"( [0-9.]+e\+(299|300) +-?[0-9.]+ +[0-9.]+e\+302 )"))) << r.out;
}

// A pass-through filter registered in this process only (as a compression plugin would be):
// pairmd's HDF5 library lacks it.
size_t pass_through(unsigned, size_t, const unsigned[], size_t nbytes, size_t*, void**) { return nbytes; }

TEST(HostileInput, AMissingHdf5FilterIsNamed) {
  test::ScratchDir dir("hostile");
  {
    h5::LibraryLock lock(h5::library_mutex());
    const H5Z_class2_t filter = {H5Z_CLASS_T_VERS, 32000, 1, 1, "lzf", nullptr, nullptr, pass_through};
    ASSERT_GE(H5Zregister(&filter), 0);
  }
  h5::Handle dcpl(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_filter(dcpl, 32000, H5Z_FLAG_MANDATORY, 0, nullptr);
  write_h5md(dir / "s.h5", 2, {1, 1, 1, 2, 2, 2}, dcpl);
  expect_start_refused(dir, "s.h5",
                       R"('s\.h5': particles/all/position/value is compressed with HDF5 filter 32000 \(lzf\), which )"
                       R"(this pairmd's HDF5 library does not have)");
}

}  // namespace
}  // namespace pairmd
