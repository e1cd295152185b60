// One macro so that physics headers compile for the host (CPU backend) and the device
// (every GPU strategy) without duplication.
#pragma once

#if defined(__CUDACC__)
#define PAIRMD_HD __host__ __device__ __forceinline__
#else
#define PAIRMD_HD inline
#endif

// Keep the next loop rolled in device code (a loop whose large body must appear once, for the
// instruction cache); host compilers see nothing.
#if defined(__CUDA_ARCH__)
#define PAIRMD_NO_UNROLL _Pragma("unroll 1")
#else
#define PAIRMD_NO_UNROLL
#endif
