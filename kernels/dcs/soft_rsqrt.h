// 1/sqrt(x) in float on the FMA pipes, for the exact DCS kernel variant that moves a share of
// its reciprocal square roots off the special-function units (MUFU.RSQ, 16 per SM and clock on
// the H100, the bound of the exact kernels). Written once for the GPU kernel and the host test
// that checks it on every float in [1, 4) (one period of the exponent: the guess scales exactly
// with powers of 4).
//
// The initial guess is the bit-level one, y0 = bits^-1(R - bits(x) / 2), followed by two
// Newton-like steps y <- y (c1 - c2 x y^2) with tuned coefficients:
//   step 1: R = 0x5F1FFFF9, c1 = 0.703952253 * 2.38924456, c2 = 0.703952253 (Moroz, Walczyk,
//           Hrynchyshyn, Holimath, Cieslinski, "Fast calculation of inverse square root with the
//           use of magic constant - analytical approach", Appl. Math. Comput. 316 (2018)):
//           relative error within +-6.5e-4;
//   step 2: Newton's 1.5 and 0.5 scaled by s = 2 / (2 - m), m = 1.5 e^2 + 0.5 e^3 at e = 6.5e-4,
//           which centres the (otherwise one-sided, <= 0) error: +-3.2e-7 in exact arithmetic.
// In float with FMA: relative error within [-4.9e-7, 4.4e-7], RMS 2.4e-7, mean ~0 over [1, 4)
// (MUFU.RSQ: ~1e-7). Cost: 2 integer and 8 FP32 instructions instead of one MUFU. Valid for
// normal positive x (the kernels clamp r^2 to floor^2 > 0).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/hd.h"

namespace pairmd::dcs {

PAIRMD_HD float rsqrt_fma(float x) {
#if defined(__CUDA_ARCH__)
  const int bits = __float_as_int(x);
  float y = __int_as_float(0x5F1FFFF9 - (bits >> 1));
#define PAIRMD_FMAF fmaf
#else
  std::int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const std::int32_t guess = 0x5F1FFFF9 - (bits >> 1);
  float y;
  std::memcpy(&y, &guess, sizeof y);
#define PAIRMD_FMAF std::fmaf
#endif
  const float k2x = 0.703952253f * x;
  y = y * PAIRMD_FMAF(-k2x, y * y, 1.68191409f);
  const float c2x = 0.500000179f * x;
  y = y * PAIRMD_FMAF(-c2x, y * y, 1.50000048f);
#undef PAIRMD_FMAF
  return y;
}

}  // namespace pairmd::dcs
