// Vocabulary shared by the dense small-block primitives (dense/*.hpp): the operand modifiers, and
// the few helpers every primitive leans on.
//
// Dense blocks are column-major with a run-time leading dimension: X(i,j) = X[i + j*ldx]. Indices
// are `int`: these are small blocks (tens of rows), never whole problems.
#pragma once

#include "knot/linalg/group.hpp"

#if defined(__CUDACC__) || defined(__GNUC__) || defined(__clang__)
#define KNOT_RESTRICT __restrict__
#else
#define KNOT_RESTRICT
#endif

// Unroll the next loop completely. Only for loops whose trip count is a compile-time constant once
// the enclosing loops are unrolled (the fixed-size paths): small fixed blocks then live in registers.
#if defined(__CUDA_ARCH__) || defined(__clang__)
#define KNOT_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__CUDACC__)  // nvcc's host pass knows neither pragma
#define KNOT_UNROLL _Pragma("GCC unroll 64")
#else
#define KNOT_UNROLL
#endif

namespace knot::linalg {

// op(X) = X (No) or X' (Yes).
enum class Trans { No, Yes };
// Which triangle of a square operand is read or written; the diagonal belongs to both.
enum class Uplo { Lower, Upper };
// Whether a triangular operand multiplies the unknown from the left (op(A) X) or the right (X op(A)).
enum class Side { Left, Right };

namespace detail {

// True for a group that is one thread by its type (SerialGroup). Such a group runs loops in the
// order that vectorizes on a CPU; any other group spreads output elements over members. Both orders
// apply the same operations, in the same order, to each output element, so they agree bitwise.
template <class G>
inline constexpr bool kSerial = false;
template <>
inline constexpr bool kSerial<SerialGroup> = true;
template <>
inline constexpr bool kSerial<const SerialGroup> = true;

// Rows per register tile of a product. A CPU thread accumulates a column strip of up to 16 rows at
// once (independent sums, so they pipeline and vectorize); other groups give each member one element.
template <class G, int M>
KNOT_HD constexpr int tile_rows() {
  if constexpr (!kSerial<G>) {
    return 1;
  } else if constexpr (M != kDynamic && M >= 1 && M <= 16) {
    return M;
  } else {
    return 8;
  }
}

// x > 0 and finite, without std::isfinite (not callable everywhere in device code): x - x is zero
// for every finite x and NaN for +Inf and NaN. Breaks under -ffast-math, which Knot never uses.
template <class T>
KNOT_HD constexpr bool positive_finite(T x) {
  return x > T(0) && x - x == T(0);
}

// op(X)(i, p) of a column-major X.
template <Trans TX, class T>
KNOT_HD const T& op_at(const T* X, int ldx, int i, int p) {
  if constexpr (TX == Trans::No) {
    return X[i + p * ldx];
  } else {
    return X[p + i * ldx];
  }
}

// Element e of the n(n+1)/2 lower-triangle entries (i >= j), numbered so that consecutive e walk
// down a column: columns j and n-1-j are paired into n+1 slots. Integer-only (no sqrt).
KNOT_HD constexpr void lower_triangle_index(int e, int n, int& i, int& j) {
  const int q = e / (n + 1), r = e - q * (n + 1);
  if (r < n - q) {
    j = q;
    i = q + r;
  } else {
    j = n - 1 - q;
    i = j + (r - (n - q));
  }
}

KNOT_HD constexpr int min_int(int a, int b) { return a < b ? a : b; }

}  // namespace detail
}  // namespace knot::linalg
