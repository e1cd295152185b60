// The key of GPU work (base/work_key.h), which decides whether a cached CUDA graph may be
// replayed: every scalar a kernel receives, however deeply nested in its argument structs, must
// change the key when it changes (else a graph would replay a stale value), and padding, which
// holds whatever the stack held, must not (else every chunk would be captured again).
// scripts/check_launches.py (ctest `launches`) checks that every launch of the CUDA backend
// writes its key; this checks what the key sees.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/work_key.h"

namespace pairmd {
namespace {

enum class Kind : unsigned char { A, B };

// Shapes of the backend's argument structs: pointers, counts, floats, bools and enums between
// them (padding), nested aggregates, arrays of aggregates, 64-bit integers.
struct Inner {
  const float* p;
  int n;
  bool periodic;
  double width;
};
struct Leaf {
  float x, y, z;
};
struct Args {
  Inner inner;
  Kind kind;
  float max_move_sq;
  KernelArray<Leaf, 3> leaves;
  int64_t seed;
  bool begin;
  unsigned char byte;
  const void* flags;
  float nan_is_a_value;
};

// The byte ranges of every scalar of v, found through the same field walk the key uses.
template <typename T>
void leaves_of(const T& v, const unsigned char* base, std::vector<std::pair<size_t, size_t>>& out) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U> || std::is_pointer_v<U>) {
    out.emplace_back(reinterpret_cast<const unsigned char*>(&v) - base, sizeof v);
  } else if constexpr (work_key_detail::IsKernelArray<U>::value) {
    for (int k = 0; k < U::size(); ++k) leaves_of(v[k], base, out);
  } else {
    work_key_detail::for_each_field(v, [&](const auto& f) { leaves_of(f, base, out); });
  }
}

template <typename T>
WorkKey key_of(const T& v) {
  WorkKey k;
  k.add(v);
  return k;
}

Args sample(unsigned char fill) {
  Args a;
  std::memset(&a, fill, sizeof a);  // the padding: all zeros or all ones
  static const float data[4] = {};
  a.inner = {data, 1000, true, 2.5};
  a.kind = Kind::B;
  a.max_move_sq = 0.25f;
  for (int k = 0; k < 3; ++k) a.leaves[k] = {1.0f * k, 2.0f, 3.0f};
  a.seed = 1990;
  a.begin = true;
  a.byte = 7;
  a.flags = data + 2;
  a.nan_is_a_value = NAN;
  return a;
}

TEST(WorkKey, EveryScalarOfNestedArgumentsChangesTheKey) {
  const Args a = sample(0);
  std::vector<std::pair<size_t, size_t>> leaves;
  leaves_of(a, reinterpret_cast<const unsigned char*>(&a), leaves);
  // inner (4) + kind + max_move_sq + 3 x 3 leaf floats + seed + begin + byte + flags + nan
  ASSERT_EQ(leaves.size(), 4u + 1 + 1 + 9 + 1 + 1 + 1 + 1 + 1);
  const WorkKey base = key_of(a);
  EXPECT_EQ(base, key_of(a));
  for (const auto& [offset, size] : leaves) {
    for (size_t byte = 0; byte < size; ++byte) {
      Args b = a;
      reinterpret_cast<unsigned char*>(&b)[offset + byte] ^= 0x01;
      EXPECT_NE(key_of(b), base) << "the scalar at byte " << offset << " (" << size << " bytes), byte " << byte;
    }
  }
}

TEST(WorkKey, PaddingDoesNotChangeTheKey) {
  const Args zeros = sample(0x00), ones = sample(0xff);
  ASSERT_NE(std::memcmp(&zeros, &ones, sizeof(Args)), 0) << "the struct must have padding for this test";
  EXPECT_EQ(key_of(zeros), key_of(ones));
  // And the key is smaller than the object: it holds the fields, not the padding.
  EXPECT_LT(key_of(zeros).size(), sizeof(Args));
}

TEST(WorkKey, ArgumentsInSequenceAreNotConfused) {
  // (1, 23) and (12, 3) as two ints each: the same bytes would only appear by accident of
  // formatting; the key holds fixed-size fields, so the two sequences differ.
  WorkKey a, b;
  a.add(1);
  a.add(23);
  b.add(12);
  b.add(3);
  EXPECT_NE(a, b);
  WorkKey c, d;
  c.add(int64_t{5});
  d.add(5);
  d.add(0);
  EXPECT_EQ(c.size(), d.size());  // same length: a key compares work of one layout with itself
}

}  // namespace
}  // namespace pairmd
