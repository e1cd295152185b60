// The GPU box update (kernels/box_update.cuh) against the CPU reference of the same stage
// (integrators/barostat.h as CpuBackend::update_box applies it): the factors and the new box in
// double, and every particle's position, velocity, image and list reference in float. Skips
// where there is no GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <random>

#include "backends/backend.h"
#include "cuda/block_reduce.cuh"
#include "cuda/device_buffer.h"
#include "kernels/box_update.cuh"
#include "tests/test_support.h"

namespace pairmd {
namespace {

void expect_same_update(BarostatCoupling couple, double p0) {
  const int n = 3000;
  const Box box{{-1.0, 2.0, 0.5}, {11.0, 12.0, 13.0}, true};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::normal_distribution<float> g(0.f, 1.1f);
  std::vector<float4> pos(n), vel(n), ref(n);
  std::vector<int3> image(n);
  for (int i = 0; i < n; ++i) {
    pos[i] = make_float4(box.lo.x + box.L.x * u(rng), box.lo.y + box.L.y * u(rng), box.lo.z + box.L.z * u(rng), 0.f);
    pos[i].x = i == 0 ? float(box.lo.x + box.L.x) - 1e-6f : pos[i].x;  // next to the upper face
    ref[i] = make_float4(pos[i].x - 0.05f, pos[i].y + 0.02f, pos[i].z, 0.f);
    vel[i] = make_float4(g(rng), g(rng), g(rng), 1.0f + (i % 3));
    image[i] = make_int3(i % 5 - 2, 1, -(i % 2));
  }
  BarostatSettings s;
  s.kind = BarostatKind::CRescale;
  s.pressure = p0;
  s.tau_p = 0.05;  // short, so that the factors are well away from 1
  s.compressibility = 0.5;
  s.couple = couple;
  s.every = 2;
  const double dt = 0.005, kT = 1.3, virial[3] = {-900.0, -1400.0, -700.0};
  const uint64_t seed = 77, step = 40;  // due: every is 2

  // The CPU reference: K_aa in double from the float velocities, then the shared functions.
  double mvv[3] = {0, 0, 0};
  for (const float4& v : vel) {
    mvv[0] += double(v.w) * v.x * v.x;
    mvv[1] += double(v.w) * v.y * v.y;
    mvv[2] += double(v.w) * v.z * v.z;
  }
  const double kinetic[3] = {0.5 * mvv[0], 0.5 * mvv[1], 0.5 * mvv[2]};
  double mu[3];
  c_rescale_factors(s, kT, dt, pressure_diagonal(kinetic, virial, box.volume()), box.volume(), seed, step, mu);
  const Box new_box = scaled_box(box, mu);

  DeviceBuffer<float4> d_pos, d_vel, d_ref;
  DeviceBuffer<int3> d_image;
  d_pos.upload(pos);
  d_vel.upload(vel);
  d_ref.upload(ref);
  d_image.upload(image);
  DeviceBuffer<double> d_virial, parts(3 * blocks_for(n)), sums(3);
  d_virial.upload(std::vector<double>(virial, virial + 3));
  DeviceBox hb{};
  for (int d = 0; d < 3; ++d) hb.L[d] = (&box.L.x)[d];
  hb.box = {
      {float(box.lo.x), float(box.lo.y), float(box.lo.z)}, {float(box.L.x), float(box.L.y), float(box.L.z)}, true};
  hb.scale_since_build = 1.f;
  DeviceBuffer<DeviceBox> d_box;
  d_box.upload(std::vector<DeviceBox>{hb});
  StepControl hc{};
  hc.step = step + 1;  // decide_step has counted the step being taken
  DeviceBuffer<StepControl> d_ctrl;
  d_ctrl.upload(std::vector<StepControl>{hc});
  DeviceBuffer<SystemParams> d_sys;
  d_sys.upload(std::vector<SystemParams>{SystemParams{float(kT), seed}});

  BoxUpdateArgs a{d_pos.data(),
                  d_vel.data(),
                  d_image.data(),
                  d_ref.data(),
                  n,
                  d_virial.data(),
                  parts.data(),
                  sums.data(),
                  d_box.data(),
                  d_ctrl.data(),
                  s,
                  1.0,
                  dt,
                  seed,
                  2.8f,
                  d_sys.data()};
  Launcher now(nullptr);
  enqueue_box_update(now, a);
  PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());

  const DeviceBox out = d_box.download()[0];
  EXPECT_EQ(out.too_small, 0);
  for (int d = 0; d < 3; ++d) {
    // kT went through a float (kT_mvv) and the sums add in another order: the factors agree to
    // float rounding of kT in the noise, ~1e-7 of ln mu.
    EXPECT_NEAR(std::log(out.mu[d]), std::log(mu[d]), 1e-6 * std::fabs(std::log(mu[d]))) << d;
    EXPECT_NEAR(out.L[d], (&new_box.L.x)[d], 1e-12 * out.L[d]) << d;
  }
  const std::vector<float4> p2 = d_pos.download(), v2 = d_vel.download(), r2 = d_ref.download();
  const std::vector<int3> i2 = d_image.download();
  const BoxGeometry<float> fbox = out.box;
  const float fmu[3] = {float(out.mu[0]), float(out.mu[1]), float(out.mu[2])};
  // The device may fuse lo + mu (x - lo) into one rounding: positions agree to float rounding of
  // the box (edges ~12: 2e-6), compared unwrapped so that a particle on the upper face may be
  // wrapped on one side and not on the other; velocities (a division) bit for bit.
  auto unwrapped = [&](float x, int image, int d) { return double(x) + image * double((&fbox.L.x)[d]); };
  for (int i = 0; i < n; ++i) {
    Vec3<float> x{pos[i].x, pos[i].y, pos[i].z}, v{vel[i].x, vel[i].y, vel[i].z};
    Int3 im{image[i].x, image[i].y, image[i].z};
    rescale_particle(x, v, im, fmu, fbox, fbox);
    ASSERT_NEAR(unwrapped(p2[i].x, i2[i].x, 0), unwrapped(x.x, im.x, 0), 1e-5) << i;
    ASSERT_NEAR(unwrapped(p2[i].y, i2[i].y, 1), unwrapped(x.y, im.y, 1), 1e-5) << i;
    ASSERT_NEAR(unwrapped(p2[i].z, i2[i].z, 2), unwrapped(x.z, im.z, 2), 1e-5) << i;
    ASSERT_TRUE(p2[i].x >= fbox.lo.x && p2[i].x < fbox.lo.x + fbox.L.x) << i << ": not wrapped";
    ASSERT_EQ(v2[i].x, v.x) << i;
    ASSERT_EQ(v2[i].y, v.y) << i;
    ASSERT_EQ(v2[i].z, v.z) << i;
    ASSERT_EQ(v2[i].w, vel[i].w) << i;
    ASSERT_NEAR(r2[i].x, fbox.lo.x + fmu[0] * (ref[i].x - fbox.lo.x), 1e-5) << i;
    ASSERT_NEAR(r2[i].z, fbox.lo.z + fmu[2] * (ref[i].z - fbox.lo.z), 1e-5) << i;
  }
}

TEST(GpuBoxUpdate, MatchesTheCpuStageInEveryCoupling) {
  PAIRMD_REQUIRE_GPU();
  expect_same_update(BarostatCoupling::Isotropic, 0.5);
  expect_same_update(BarostatCoupling::SemiIsotropic, -0.5);
  expect_same_update(BarostatCoupling::Anisotropic, 2.0);
}

// A box the update would shrink below min_half_edge halts the chunk and says why; the box and
// the particles stay as they were. On a step the barostat leaves out (every: 2) nothing happens.
void squeeze(int64_t every, uint64_t ctrl_step, bool expect_halt) {
  DeviceBox hb{};
  for (double& l : hb.L) l = 5.6;
  hb.box = {{0, 0, 0}, {5.6f, 5.6f, 5.6f}, true};
  hb.scale_since_build = 1.f;
  DeviceBuffer<DeviceBox> d_box;
  d_box.upload(std::vector<DeviceBox>{hb});
  StepControl hc{};
  hc.step = ctrl_step;
  DeviceBuffer<StepControl> d_ctrl;
  d_ctrl.upload(std::vector<StepControl>{hc});
  DeviceBuffer<float4> pos, vel, ref;
  pos.upload(std::vector<float4>{make_float4(1, 1, 1, 0)});
  vel.upload(std::vector<float4>{make_float4(0.5f, 0, 0, 1)});
  ref.upload(std::vector<float4>{make_float4(1, 1, 1, 0)});
  DeviceBuffer<int3> image;
  image.upload(std::vector<int3>{make_int3(0, 0, 0)});
  DeviceBuffer<double> virial, parts(3), sums(3);
  virial.upload(std::vector<double>{-1e4, -1e4, -1e4});  // deep tension: the box shrinks
  BarostatSettings s;
  s.kind = BarostatKind::CRescale;
  s.tau_p = 0.05;
  s.compressibility = 1.0;
  s.every = every;
  DeviceBuffer<SystemParams> d_sys;
  d_sys.upload(std::vector<SystemParams>{SystemParams{0.f, 1}});
  BoxUpdateArgs a{pos.data(),   vel.data(),  image.data(), ref.data(),    1, virial.data(),
                  parts.data(), sums.data(), d_box.data(), d_ctrl.data(), s, 1.0,
                  0.005,        1,           2.8f,         d_sys.data()};
  Launcher now(nullptr);
  enqueue_box_update(now, a);
  PAIRMD_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(d_box.download()[0].too_small, expect_halt ? 1 : 0);
  EXPECT_EQ(d_box.download()[0].L[0], 5.6);
  EXPECT_EQ(d_ctrl.download()[0].halt, expect_halt ? kHaltBlowup : kRunning);
  EXPECT_EQ(pos.download()[0].x, 1.f);
  EXPECT_EQ(vel.download()[0].x, 0.5f);
}

TEST(GpuBoxUpdate, ABoxTooSmallHaltsTheChunk) {
  PAIRMD_REQUIRE_GPU();
  squeeze(1, 1, true);
}

TEST(GpuBoxUpdate, AStepTheBarostatLeavesOutChangesNothing) {
  PAIRMD_REQUIRE_GPU();
  squeeze(2, 2, false);  // the step being taken is 1
}

}  // namespace
}  // namespace pairmd
