// Times cuFFT's 3D real-to-complex plus complex-to-real transform of an n^3 float grid (what a
// PME step does once each) for every n in [lo, hi] with no prime factor above 7, so that the
// grid rule of potentials/pme.cpp can prefer the sizes cuFFT does fast. Random input (never
// zeros); the median of `repeats` timed pairs after two untimed ones.
//
// usage: pme_fft_sizes [lo] [hi] [repeats]      (defaults 160 512 9); prints CSV: n,points,ms
// build: nvcc -O2 -arch=sm_90 bench/pme_fft_sizes.cu -lcufft -o pme_fft_sizes
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)
#define CHECK_FFT(x)                                                                \
  do {                                                                              \
    cufftResult r_ = (x);                                                           \
    if (r_ != CUFFT_SUCCESS) {                                                      \
      std::fprintf(stderr, "%s:%d: cuFFT error %d\n", __FILE__, __LINE__, (int)r_); \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

// A hash of the index in [-1, 1): random-looking, not zero, no host copy of a large grid.
__global__ void fill(float* v, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = static_cast<unsigned>(i) * 2654435761u + 12345u;
  x ^= x >> 16;
  x *= 2246822519u;
  x ^= x >> 13;
  v[i] = static_cast<float>(x) * (2.0f / 4294967296.0f) - 1.0f;
}

static bool friendly(int n) {
  for (int f : {2, 3, 5, 7})
    while (n % f == 0) n /= f;
  return n == 1;
}

int main(int argc, char** argv) {
  const int lo = argc > 1 ? std::atoi(argv[1]) : 160, hi = argc > 2 ? std::atoi(argv[2]) : 512;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 9;
  std::printf("n,points,ms\n");
  for (int n = lo; n <= hi; ++n) {
    if (!friendly(n)) continue;
    const size_t points = static_cast<size_t>(n) * n * n, half = static_cast<size_t>(n) * n * (n / 2 + 1);
    float* real = nullptr;
    cufftComplex* spectrum = nullptr;
    CHECK(cudaMalloc(&real, points * sizeof(float)));
    CHECK(cudaMalloc(&spectrum, half * sizeof(cufftComplex)));
    cufftHandle fwd, bwd;
    CHECK_FFT(cufftPlan3d(&fwd, n, n, n, CUFFT_R2C));
    CHECK_FFT(cufftPlan3d(&bwd, n, n, n, CUFFT_C2R));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < repeats + 2; ++r) {
      // Fresh input every time (the unnormalised round trip scales the grid by n^3).
      fill<<<static_cast<unsigned>((points + 255) / 256), 256>>>(real, points);
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(a));
      CHECK_FFT(cufftExecR2C(fwd, real, spectrum));
      CHECK_FFT(cufftExecC2R(bwd, spectrum, real));
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, a, b));
      if (r >= 2) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%d,%zu,%.4f\n", n, points, ms[ms.size() / 2]);
    std::fflush(stdout);
    cufftDestroy(fwd);
    cufftDestroy(bwd);
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    CHECK(cudaFree(real));
    CHECK(cudaFree(spectrum));
  }
  return 0;
}
