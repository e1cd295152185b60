#include "kernels/device_particles.cuh"

#include <cstring>

#include "cuda/block_reduce.cuh"

namespace pairmd {

namespace {

struct RenumberArgs {
  const int* order;
  int n;
  const float4* pos;
  float4* pos_new;
  float4* pos_build;
  const float4* vel;
  float4* vel_new;
  const int3* image;
  int3* image_new;
  const float* charge;
  float* charge_new;
  const unsigned* tag;
  unsigned* tag_new;
  unsigned* rank;
};

__global__ void renumber_kernel(RenumberArgs a) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= a.n) return;
  const int o = a.order[k];
  const float4 x = a.pos[o];
  a.pos_new[k] = x;
  a.pos_build[k] = x;
  a.vel_new[k] = a.vel[o];
  a.image_new[k] = a.image[o];
  a.charge_new[k] = a.charge[o];
  const unsigned t = a.tag[o];
  a.tag_new[k] = t;
  a.rank[t] = static_cast<unsigned>(k);
}

// download(): particle rank[t] of the current numbering as user index t.
__global__ void gather_user_order_kernel(const float4* a, const int3* b, const unsigned* rank, int n, float4* a_out,
                                         int3* b_out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  const unsigned p = rank[t];
  a_out[t] = a[p];
  if (b) b_out[t] = b[p];
}

}  // namespace

size_t DeviceParticles::bytes() const {
  return pos_[0].bytes() + pos_[1].bytes() + vel_.bytes() + pos_build_.bytes() + force_.bytes() + vel_tmp_.bytes() +
         image_.bytes() + image_tmp_.bytes() + charge_.bytes() + charge_tmp_.bytes() + tag_.bytes() + rank_.bytes() +
         tag_tmp_.bytes() + fixed_.bytes();
}

void DeviceParticles::upload(const SystemState& s) {
  n_ = static_cast<int>(s.size());
  std::vector<float4> pos(n_), vel(n_);
  std::vector<int3> img(n_);
  std::vector<float> q(n_);
  std::vector<unsigned> tag(n_);
  for (int i = 0; i < n_; ++i) {
    float type_bits;  // the type travels in w as the bits of an int
    const int type = s.type[i];
    std::memcpy(&type_bits, &type, sizeof type_bits);
    pos[i] = make_float4(static_cast<float>(s.position[i].x), static_cast<float>(s.position[i].y),
                         static_cast<float>(s.position[i].z), type_bits);
    vel[i] = make_float4(static_cast<float>(s.velocity[i].x), static_cast<float>(s.velocity[i].y),
                         static_cast<float>(s.velocity[i].z), static_cast<float>(s.mass[i]));
    img[i] = make_int3(s.image[i].x, s.image[i].y, s.image[i].z);
    q[i] = static_cast<float>(s.charge[i]);
    tag[i] = static_cast<unsigned>(i);
  }
  current_ = 0;
  pos_[0].upload(pos);
  pos_[1].resize(n_);
  vel_.upload(vel);
  image_.upload(img);
  charge_.upload(q);
  tag_.upload(tag);
  rank_.upload(tag);  // identity until the first renumbering
  pos_build_.upload(pos);
  force_.resize(n_);
  fixed_.resize(n_);
  vel_tmp_.resize(n_);
  image_tmp_.resize(n_);
  charge_tmp_.resize(n_);
  tag_tmp_.resize(n_);
  if (n_ > 0) {
    PAIRMD_CUDA_CHECK(cudaMemset(force_.data(), 0, n_ * sizeof(float4)));
    PAIRMD_CUDA_CHECK(cudaMemset(fixed_.data(), 0, n_ * sizeof(FixedVec)));
  }
}

void DeviceParticles::renumber(Launcher& launcher, const int* order) {
  if (n_ == 0) return;
  const int next = current_ ^ 1;
  RenumberArgs a{order,
                 n_,
                 pos_[current_].data(),
                 pos_[next].data(),
                 pos_build_.data(),
                 vel_.data(),
                 vel_tmp_.data(),
                 image_.data(),
                 image_tmp_.data(),
                 charge_.data(),
                 charge_tmp_.data(),
                 tag_.data(),
                 tag_tmp_.data(),
                 rank_.data()};
  launcher.kernel(PAIRMD_HERE, renumber_kernel, blocks_for(n_), kBlockSize, 0, a);
  // Back into the arrays the kernels were given (their addresses stay, so do captured graphs).
  launcher.copy(PAIRMD_HERE, vel_.data(), vel_tmp_.data(), n_ * sizeof(float4), cudaMemcpyDeviceToDevice);
  launcher.copy(PAIRMD_HERE, image_.data(), image_tmp_.data(), n_ * sizeof(int3), cudaMemcpyDeviceToDevice);
  launcher.copy(PAIRMD_HERE, charge_.data(), charge_tmp_.data(), n_ * sizeof(float), cudaMemcpyDeviceToDevice);
  launcher.copy(PAIRMD_HERE, tag_.data(), tag_tmp_.data(), n_ * sizeof(unsigned), cudaMemcpyDeviceToDevice);
  current_ = next;
}

unsigned char* DeviceParticles::pinned(size_t bytes) {
  if (host_out_bytes_ < bytes) {
    unsigned char* p = nullptr;
    PAIRMD_CUDA_CHECK(cudaMallocHost(&p, bytes));
    host_out_.reset(p);
    host_out_bytes_ = bytes;
  }
  return host_out_.get();
}

std::vector<float4> DeviceParticles::in_user_order(const float4* a, cudaStream_t stream) {
  if (n_ == 0) return {};
  const size_t n = static_cast<size_t>(n_);
  float4* host = reinterpret_cast<float4*>(pinned(n * sizeof(float4)));
  Launcher now(stream);
  now.kernel(PAIRMD_HERE, gather_user_order_kernel, blocks_for(n_), kBlockSize, 0, a, static_cast<const int3*>(nullptr),
             rank_.data(), n_, vel_tmp_.data(), static_cast<int3*>(nullptr));
  now.copy(PAIRMD_HERE, host, vel_tmp_.data(), n * sizeof(float4), cudaMemcpyDeviceToHost);
  PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::vector<float4>(host, host + n);
}

void DeviceParticles::download(SystemState& s, cudaStream_t stream) {
  if (n_ == 0) return;
  const size_t n = static_cast<size_t>(n_);
  float4* pos = reinterpret_cast<float4*>(pinned(n * (2 * sizeof(float4) + sizeof(int3))));
  float4* vel = pos + n;
  int3* img = reinterpret_cast<int3*>(vel + n);
  {
    // Positions and images first, then the velocities through the same scratch array (the
    // stream keeps the copy before the second gather).
    Launcher now(stream);
    now.kernel(PAIRMD_HERE, gather_user_order_kernel, blocks_for(n_), kBlockSize, 0, pos_[current_].data(),
               image_.data(), rank_.data(), n_, vel_tmp_.data(), image_tmp_.data());
    now.copy(PAIRMD_HERE, pos, vel_tmp_.data(), n * sizeof(float4), cudaMemcpyDeviceToHost);
    now.copy(PAIRMD_HERE, img, image_tmp_.data(), n * sizeof(int3), cudaMemcpyDeviceToHost);
    now.kernel(PAIRMD_HERE, gather_user_order_kernel, blocks_for(n_), kBlockSize, 0, vel_.data(),
               static_cast<const int3*>(nullptr), rank_.data(), n_, vel_tmp_.data(), static_cast<int3*>(nullptr));
    now.copy(PAIRMD_HERE, vel, vel_tmp_.data(), n * sizeof(float4), cudaMemcpyDeviceToHost);
    PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  for (size_t t = 0; t < n; ++t) {
    s.position[t] = {pos[t].x, pos[t].y, pos[t].z};
    s.velocity[t] = {vel[t].x, vel[t].y, vel[t].z};
    s.image[t] = {img[t].x, img[t].y, img[t].z};
  }
}

}  // namespace pairmd
