// One macro so that physics headers compile for the host (CPU backend) and the device
// (every GPU strategy) without duplication.
#pragma once

#if defined(__CUDACC__)
#define PAIRMD_HD __host__ __device__ __forceinline__
#else
#define PAIRMD_HD inline
#endif
