// The H5MD writer and reader in-process: what a run writes reads back exactly, frames land at
// their intervals, grids are stored as documented, an append drops frames after the restart
// step, and every reader failure is an error naming the file.
#include <gtest/gtest.h>

#include <hdf5.h>

#include <cstring>
#include <future>
#include <thread>

#include "backends/cpu_backend.h"
#include "engine/simulation.h"
#include "engine/system_builder.h"
#include "io/h5md.h"
#include "io/h5md_writer.h"
#include "io/hdf5_util.h"
#include "tests/test_support.h"

namespace pairmd {
namespace {

using test::ScratchDir;

struct Fixture {
  RunConfig cfg;
  BuiltSystem sys;
  Model model;
  explicit Fixture(
      const std::string& traj = "{every: 100, velocities_every: 200, forces_every: 200, observables_every: 50}") {
    cfg = parse_config(test::small_lj_config(300, traj), "small.yaml");
    sys = build_system(cfg);
    model = cfg.model;
    model.topology = sys.topology;
  }
};

std::vector<int64_t> read_steps(const std::string& path, const std::string& dataset) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0);
  hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  EXPECT_GE(d, 0) << dataset;
  hid_t s = H5Dget_space(d);
  hsize_t n = 0;
  H5Sget_simple_extent_dims(s, &n, nullptr);
  std::vector<int64_t> v(n);
  if (n) H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Sclose(s);
  H5Dclose(d);
  H5Fclose(f);
  return v;
}

TEST(H5md, RunWritesFramesThatReadBackExactly) {
  ScratchDir dir;
  Fixture s;
  const std::string path = dir / "t.h5";
  Simulation sim(s.cfg, s.sys.topology, std::make_unique<CpuBackend>(s.model, s.sys.state));
  sim.add_observer(std::make_unique<H5mdWriter>(path, s.cfg, s.sys.state, s.sys.topology, 3.0 * 256 - 3));
  const RunResult r = sim.run(300);
  ASSERT_EQ(r.outcome, RunOutcome::Completed);
  SystemState end;
  sim.backend().get_state(end);

  EXPECT_EQ(read_steps(path, "particles/all/position/step"), (std::vector<int64_t>{0, 100, 200, 300}));
  EXPECT_EQ(read_steps(path, "particles/all/box/edges/step"), (std::vector<int64_t>{0, 100, 200, 300}));
  EXPECT_EQ(read_steps(path, "particles/all/velocity/step"), (std::vector<int64_t>{0, 200, 300}));
  EXPECT_EQ(read_steps(path, "particles/all/force/step"), (std::vector<int64_t>{0, 200}));
  EXPECT_EQ(read_steps(path, "observables/temperature/step"), (std::vector<int64_t>{0, 50, 100, 150, 200, 250, 300}));

  const H5mdFrame last = read_h5md_frame(path, -1);
  EXPECT_EQ(last.state.step, 300);
  EXPECT_DOUBLE_EQ(last.time, 300 * s.cfg.model.integrator.dt);
  ASSERT_EQ(last.state.size(), end.size());
  EXPECT_EQ(std::memcmp(last.state.position.data(), end.position.data(), end.size() * sizeof(Vec3d)), 0);
  EXPECT_EQ(std::memcmp(last.state.velocity.data(), end.velocity.data(), end.size() * sizeof(Vec3d)), 0);
  EXPECT_EQ(std::memcmp(last.state.image.data(), end.image.data(), end.size() * sizeof(Int3)), 0);
  EXPECT_EQ(last.state.type_names, std::vector<std::string>{"A"});
  EXPECT_EQ(last.state.box.L.x, end.box.L.x);
  EXPECT_TRUE(last.state.box.periodic);

  const H5mdFrame first = read_h5md_frame(path, 0);
  EXPECT_EQ(first.state.step, 0);
  EXPECT_EQ(std::memcmp(first.state.position.data(), s.sys.state.position.data(), end.size() * sizeof(Vec3d)), 0);
  // Frame 1 (step 100) has no velocities stored: zero.
  EXPECT_EQ(read_h5md_frame(path, 1).state.velocity[0].x, 0.0);
}

TEST(H5md, ReaderErrorsNameTheFileAndTheProblem) {
  ScratchDir dir;
  Fixture s;
  auto expect = [&](const std::string& path, int64_t frame, const char* what) {
    try {
      read_h5md_frame(path, frame);
      FAIL() << path << " frame " << frame << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect(dir / "missing.h5", -1, "No such file");
  test::write_text(dir / "text.h5", "not hdf5");
  expect(dir / "text.h5", -1, "not an HDF5 file");
  { H5mdWriter w(dir / "empty.h5", s.cfg, s.sys.state, s.sys.topology, 1.0); }
  expect(dir / "empty.h5", -1, "no position");
  {
    CpuBackend b(s.model, s.sys.state);
    Observables o = b.observables();
    RunContext ctx{s.cfg, s.sys.topology, b, 0, 100};
    H5mdWriter w(dir / "one.h5", s.cfg, s.sys.state, s.sys.topology, 1.0);
    w.observe(ctx, Frame{s.sys.state, o, 0.0});
  }
  expect(dir / "one.h5", 1, "out of range");
  EXPECT_EQ(read_h5md_frame(dir / "one.h5", 0).state.size(), 256u);
  const std::string bytes = test::read_text(dir / "one.h5");
  test::write_text(dir / "cut.h5", bytes.substr(0, bytes.size() / 3));
  expect(dir / "cut.h5", -1, "cut.h5");
}

TEST(H5md, AppendDropsFramesAfterTheRestartStepAndChecksTheSystem) {
  ScratchDir dir;
  Fixture s("{every: 100, observables_every: 100}");
  const std::string path = dir / "t.h5";
  CpuBackend b(s.model, s.sys.state);
  SystemState st = s.sys.state;
  {
    H5mdWriter w(path, s.cfg, st, s.sys.topology, 1.0);
    for (int64_t step = 0; step <= 500; step += 100) {
      st.step = step;
      Observables o = b.observables();
      RunContext ctx{s.cfg, s.sys.topology, b, 0, 1000};
      w.observe(ctx, Frame{st, o, step * 0.005});
    }
    EXPECT_EQ(w.frames_written("particles/all/position"), 6);
  }
  {
    H5mdWriter w(path, s.cfg, st, s.sys.topology, 1.0, 200);
    EXPECT_EQ(w.frames_written("particles/all/position"), 3);
    EXPECT_EQ(w.frames_written("observables/total_energy"), 3);
    // The continued file goes on with image and box/edges sharing position's step and time.
    for (int64_t step = 300; step <= 400; step += 100) {
      st.step = step;
      Observables o = b.observables();
      RunContext ctx{s.cfg, s.sys.topology, b, 200, 1000};
      w.observe(ctx, Frame{st, o, step * 0.005});
    }
  }
  EXPECT_EQ(read_steps(path, "particles/all/position/step"), (std::vector<int64_t>{0, 100, 200, 300, 400}));
  EXPECT_EQ(read_steps(path, "particles/all/image/step"), (std::vector<int64_t>{0, 100, 200, 300, 400}));
  EXPECT_EQ(read_steps(path, "particles/all/box/edges/step"), (std::vector<int64_t>{0, 100, 200, 300, 400}));
  {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "particles/all/box/edges/value", H5P_DEFAULT);
    hid_t sp = H5Dget_space(d);
    hsize_t dims[3] = {0, 0, 0};
    EXPECT_EQ(H5Sget_simple_extent_ndims(sp), 2);  // a cuboid box: [frames, 3]
    H5Sget_simple_extent_dims(sp, dims, nullptr);
    EXPECT_EQ(dims[0], 5u);
    EXPECT_EQ(dims[1], 3u);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
  }
  const H5mdFrame back = read_h5md_frame(path, -1);
  EXPECT_EQ(back.state.step, 400);
  EXPECT_EQ(back.state.box.L.x, st.box.L.x);
  // Drop two frames again.
  { H5mdWriter w(path, s.cfg, st, s.sys.topology, 1.0, 200); }
  EXPECT_EQ(read_steps(path, "particles/all/position/step"), (std::vector<int64_t>{0, 100, 200}));
  EXPECT_EQ(read_steps(path, "particles/all/image/step"), (std::vector<int64_t>{0, 100, 200}));
  EXPECT_EQ(read_steps(path, "particles/all/position/time").size(), 3u);
  // Another system: refused, file untouched.
  RunConfig cfg3 = parse_config(test::small_lj_config(10), "x.yaml", {"system.lattice.cells=5"});
  const BuiltSystem sys3 = build_system(cfg3);
  EXPECT_THROW(H5mdWriter(path, cfg3, sys3.state, sys3.topology, 1.0, 200), std::runtime_error);
  EXPECT_EQ(read_steps(path, "particles/all/position/step").size(), 3u);
}

// Frames are written behind the run (flush_seconds > 0): observe() hands a frame over while
// another thread holds HDF5's library lock (so nothing can be written), waits with the next one
// until that one is written, and the file then holds every frame, in order, as it was handed
// over.
TEST(H5md, FramesAreWrittenBehindTheRunInOrder) {
  ScratchDir dir;
  Fixture s("{every: 100, velocities_every: 100, observables_every: 100, flush_seconds: 10}");
  const std::string path = dir / "t.h5";
  CpuBackend b(s.model, s.sys.state);
  const Observables o = b.observables();
  const RunContext ctx{s.cfg, s.sys.topology, b, 0, 1000};
  H5mdWriter w(path, s.cfg, s.sys.state, s.sys.topology, 1.0);
  std::vector<SystemState> given;
  for (int64_t step = 0; step <= 300; step += 100) {
    SystemState st = s.sys.state;
    test::jiggle(st, 0.1, static_cast<uint64_t>(step) + 1);
    st.step = step;
    given.push_back(st);
  }
  std::promise<void> release;
  std::promise<void> held;
  std::thread holder([&] {
    h5::LibraryLock lock(h5::library_mutex());
    held.set_value();
    release.get_future().wait();
  });
  held.get_future().wait();
  auto hand_over = [&](size_t k) {
    return std::async(std::launch::async, [&, k] { w.observe(ctx, Frame{given[k], o, given[k].step * 0.005}); });
  };
  // (The lock is let go before any assertion, so that a writer that waits for it fails the
  // test instead of hanging it.)
  std::future<void> first = hand_over(0);
  const bool first_taken = first.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  std::future<void> second = hand_over(1);
  const bool second_waited = second.wait_for(std::chrono::milliseconds(300)) == std::future_status::timeout;
  release.set_value();
  holder.join();
  EXPECT_TRUE(first_taken) << "a frame waited for the library lock";
  EXPECT_TRUE(second_waited) << "a second frame was taken before the first was written";
  first.get();
  second.get();
  w.observe(ctx, Frame{given[2], o, given[2].step * 0.005});
  w.observe(ctx, Frame{given[3], o, given[3].step * 0.005});
  EXPECT_EQ(w.frames_written("particles/all/position"), 4);  // the frames handed over, written
  w.close();
  EXPECT_EQ(read_steps(path, "particles/all/position/step"), (std::vector<int64_t>{0, 100, 200, 300}));
  for (size_t k = 0; k < given.size(); ++k) {
    const auto f = read_h5md_frame(path, static_cast<int64_t>(k));
    ASSERT_EQ(f.state.size(), given[k].size());
    EXPECT_EQ(std::memcmp(f.state.position.data(), given[k].position.data(), given[k].size() * sizeof(Vec3d)), 0)
        << "frame " << k;
    EXPECT_EQ(std::memcmp(f.state.velocity.data(), given[k].velocity.data(), given[k].size() * sizeof(Vec3d)), 0)
        << "frame " << k;
  }
}

TEST(H5md, GridFramesAndAveragesAreStoredAsDocumented) {
  ScratchDir dir;
  Fixture s("{every: 100}");
  const std::string path = dir / "g.h5";
  Grid3 g;
  g.dims = {4, 3, 2};
  g.origin = {-1, -2, -3};
  g.spacing = {0.5, 0.25, 1.0};
  g.unit = "kcal/mol/e";
  g.values.resize(g.size());
  for (size_t k = 0; k < g.size(); ++k) g.values[k] = static_cast<double>(k);
  {
    H5mdWriter w(path, s.cfg, s.sys.state, s.sys.topology, 1.0);
    w.write_grid_frame("potential", 0, 0.0, g);
    w.write_grid_frame("potential", 100, 0.5, g);
    w.write_grid_frame("potential", 100, 0.5, g);  // repeated step: skipped
    w.write_grid("potential_average", g);
    g.values[0] = 42;
    w.write_grid("potential_average", g);  // replaced
    Grid3 bad = g;
    bad.values.pop_back();
    EXPECT_THROW(w.write_grid("broken", bad), std::runtime_error);
  }
  EXPECT_EQ(read_steps(path, "fields/potential/step"), (std::vector<int64_t>{0, 100}));
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  hid_t d = H5Dopen2(f, "fields/potential/value", H5P_DEFAULT);
  hid_t sp = H5Dget_space(d);
  hsize_t dims[4];
  ASSERT_EQ(H5Sget_simple_extent_ndims(sp), 4);
  H5Sget_simple_extent_dims(sp, dims, nullptr);
  EXPECT_EQ(dims[0], 2u);
  EXPECT_EQ(dims[1], 2u);  // nz
  EXPECT_EQ(dims[2], 3u);  // ny
  EXPECT_EQ(dims[3], 4u);  // nx
  double origin[3];
  hid_t a = H5Aopen(d, "origin", H5P_DEFAULT);
  H5Aread(a, H5T_NATIVE_DOUBLE, origin);
  EXPECT_EQ(origin[1], -2.0);
  H5Aclose(a);
  H5Sclose(sp);
  H5Dclose(d);
  d = H5Dopen2(f, "fields/potential_average", H5P_DEFAULT);
  ASSERT_GE(d, 0);
  std::vector<double> v(g.size());
  H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  EXPECT_EQ(v[0], 42.0);
  EXPECT_EQ(v[5], 5.0);
  H5Dclose(d);
  H5Fclose(f);
}

}  // namespace
}  // namespace pairmd
