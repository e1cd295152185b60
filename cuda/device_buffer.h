// Owning device array that only grows (by 25 % headroom when it must), and counts the bytes
// every buffer holds so the backend can report its GPU memory.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <vector>

#include "cuda/cuda_check.h"

namespace pairmd {

inline std::atomic<size_t>& device_bytes_in_use() {
  static std::atomic<size_t> bytes{0};
  return bytes;
}

template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t n) { resize(n); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), size_(o.size_), capacity_(o.capacity_) {
    o.ptr_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = o.ptr_;
      size_ = o.size_;
      capacity_ = o.capacity_;
      o.ptr_ = nullptr;
      o.size_ = o.capacity_ = 0;
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  // Size n; contents are kept only if no reallocation happens (callers rewrite them).
  void resize(size_t n, double headroom = 1.0) {
    if (n > capacity_) {
      release();
      const size_t cap = static_cast<size_t>(static_cast<double>(n) * headroom) + 1;
      PAIRMD_CUDA_CHECK(cudaMalloc(&ptr_, cap * sizeof(T)));
      capacity_ = cap;
      device_bytes_in_use() += cap * sizeof(T);
    }
    size_ = n;
  }
  // Grow to hold at least n, with 25 % headroom so repeated growth stays rare.
  bool reserve_grow(size_t n) {
    if (n <= capacity_) return false;
    resize(n, 1.25);
    return true;
  }

  void upload(const std::vector<T>& h) {
    resize(h.size());
    if (!h.empty()) PAIRMD_CUDA_CHECK(cudaMemcpy(ptr_, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> h(size_);
    if (size_) PAIRMD_CUDA_CHECK(cudaMemcpy(h.data(), ptr_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  size_t bytes() const { return capacity_ * sizeof(T); }

 private:
  void release() {
    if (ptr_) {
      cudaFree(ptr_);
      device_bytes_in_use() -= capacity_ * sizeof(T);
    }
    ptr_ = nullptr;
    size_ = capacity_ = 0;
  }
  T* ptr_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace pairmd
