// Pair keys of the GPU pair list: (i << bits) | j, so that one radix sort orders a list by i
// and each row by j. Host and device, so the CPU tests check the decoding the kernels do.
#pragma once

#include "engine/hd.h"

namespace pairmd {

// Bits needed for indices in [0, n): keys are 32-bit while 2 * bits_for(n) <= 32.
inline int bits_for(int n) {
  int b = 1;
  while (b < 31 && (1 << b) < n) ++b;
  return b;
}

template <typename Key>
PAIRMD_HD Key pair_key(int i, int j, int bits) {
  return (static_cast<Key>(i) << bits) | static_cast<Key>(j);
}
// A pair of a half list, whichever side found it: keyed (min, max).
template <typename Key>
PAIRMD_HD Key half_list_key(int i, int j, int bits) {
  return i < j ? pair_key<Key>(i, j, bits) : pair_key<Key>(j, i, bits);
}
template <typename Key>
PAIRMD_HD int key_first(Key key, int bits) { return static_cast<int>(key >> bits); }
template <typename Key>
PAIRMD_HD int key_second(Key key, int bits) {
  return static_cast<int>(key & ((static_cast<Key>(1) << bits) - 1));
}

// Where row p of a list sorted by key starts: the first key whose i is p or more (binary
// search). p must be a particle index (below 2^bits), so that p << bits fits the key.
template <typename Key>
PAIRMD_HD int row_start_in_keys(const Key* keys, int count, int bits, int p) {
  const Key want = static_cast<Key>(p) << bits;
  int lo = 0, hi = count;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (keys[mid] < want) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Row p (0 <= p <= n) of a list of n particles sorted by key, as start and length; row n is
// the sentinel after the last (start = count, length 0), as a scan of the row lengths gives.
template <typename Key>
PAIRMD_HD void row_in_keys(const Key* keys, int count, int bits, int n, int p, int& start, int& length) {
  // Particle indices only: n << bits may not fit a key (n = 2^bits).
  start = p < n ? row_start_in_keys(keys, count, bits, p) : count;
  const int next = p + 1 < n ? row_start_in_keys(keys, count, bits, p + 1) : count;
  length = p < n ? next - start : 0;
}

}  // namespace pairmd
