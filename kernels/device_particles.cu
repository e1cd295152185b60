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

std::vector<float4> DeviceParticles::in_user_order(const float4* a, cudaStream_t stream) const {
  std::vector<float4> v(n_), out(n_);
  std::vector<unsigned> tag(n_);
  if (n_ > 0) {
    Launcher now(stream);
    now.copy(PAIRMD_HERE, v.data(), a, n_ * sizeof(float4), cudaMemcpyDeviceToHost);
    now.copy(PAIRMD_HERE, tag.data(), tag_.data(), n_ * sizeof(unsigned), cudaMemcpyDeviceToHost);
    PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  for (int p = 0; p < n_; ++p) out[tag[p]] = v[p];
  return out;
}

void DeviceParticles::download(SystemState& s, cudaStream_t stream) const {
  std::vector<float4> pos(n_), vel(n_);
  std::vector<int3> img(n_);
  std::vector<unsigned> tag(n_);
  if (n_ > 0) {
    Launcher now(stream);
    now.copy(PAIRMD_HERE, pos.data(), pos_[current_].data(), n_ * sizeof(float4), cudaMemcpyDeviceToHost);
    now.copy(PAIRMD_HERE, vel.data(), vel_.data(), n_ * sizeof(float4), cudaMemcpyDeviceToHost);
    now.copy(PAIRMD_HERE, img.data(), image_.data(), n_ * sizeof(int3), cudaMemcpyDeviceToHost);
    now.copy(PAIRMD_HERE, tag.data(), tag_.data(), n_ * sizeof(unsigned), cudaMemcpyDeviceToHost);
    PAIRMD_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  for (int p = 0; p < n_; ++p) {
    const unsigned t = tag[p];
    s.position[t] = {pos[p].x, pos[p].y, pos[p].z};
    s.velocity[t] = {vel[p].x, vel[p].y, vel[p].z};
    s.image[t] = {img[p].x, img[p].y, img[p].z};
  }
}

}  // namespace pairmd
