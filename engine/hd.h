// One macro so that physics headers compile for the host (CPU backend) and the device
// (every GPU strategy) without duplication.
#pragma once

#if defined(__CUDACC__)
#define PAIRMD_HD __host__ __device__ __forceinline__
#else
#define PAIRMD_HD inline
#endif

// Unroll the next loop in device code (a fixed-trip loop over a small array keeps the array in
// registers); host compilers see nothing.
#if defined(__CUDA_ARCH__)
#define PAIRMD_UNROLL _Pragma("unroll")
#else
#define PAIRMD_UNROLL
#endif
