// Tangent<T, W>: W directional derivatives carried side by side, the tangent type of a
// Dual<T, Tangent<T, W>> that differentiates along W seeded directions in one evaluation.
//
// Only the vector-space operations a dual number's derivative rules need: t + t, t - t, -t,
// s * t, t * s, t / s (s a scalar T). Each acts on every component separately with the scalar
// operation itself, so component k of a rule's result is bit for bit what the single-direction
// Dual<T> gives for the direction seeded in component k (t / s divides; it never multiplies by 1/s).
// Trivial and KNOT_HD, like T, so arrays of them may live in device memory.
#pragma once

#include "knot/linalg/config.hpp"

// Forces inlining of the dual and tangent operations. A model's dynamics is hundreds of them; past
// GCC's inlining limits the W-wide ones stay calls that pass W-vectors through memory (2-5x slower
// than inlined).
#if defined(__GNUC__) || defined(__clang__)
#define KNOT_DUAL_INLINE [[gnu::always_inline]]
#else
#define KNOT_DUAL_INLINE
#endif

namespace knot::problems {

template <class T, int W>
struct Tangent {
  static_assert(W >= 1);
  static constexpr int kWidth = W;
  T e[W];  // an aggregate with no constructors: trivial, and `Tangent{}` is zero

  KNOT_DUAL_INLINE KNOT_HD T& operator[](int k) { return e[k]; }
  KNOT_DUAL_INLINE KNOT_HD const T& operator[](int k) const { return e[k]; }

  KNOT_DUAL_INLINE KNOT_HD Tangent& operator+=(const Tangent& b) {
    for (int k = 0; k < W; ++k) e[k] += b.e[k];
    return *this;
  }
  KNOT_DUAL_INLINE KNOT_HD Tangent& operator-=(const Tangent& b) {
    for (int k = 0; k < W; ++k) e[k] -= b.e[k];
    return *this;
  }
};

template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator-(const Tangent<T, W>& a) {
  Tangent<T, W> r;
  for (int k = 0; k < W; ++k) r.e[k] = -a.e[k];
  return r;
}
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator+(const Tangent<T, W>& a, const Tangent<T, W>& b) {
  Tangent<T, W> r;
  for (int k = 0; k < W; ++k) r.e[k] = a.e[k] + b.e[k];
  return r;
}
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator-(const Tangent<T, W>& a, const Tangent<T, W>& b) {
  Tangent<T, W> r;
  for (int k = 0; k < W; ++k) r.e[k] = a.e[k] - b.e[k];
  return r;
}
// The scalar is T itself (not deduced from it), so a double constant times a float tangent is an
// error rather than a silent widening.
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator*(const Tangent<T, W>& a, const T& s) {
  Tangent<T, W> r;
  for (int k = 0; k < W; ++k) r.e[k] = a.e[k] * s;
  return r;
}
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator*(const T& s, const Tangent<T, W>& a) {
  Tangent<T, W> r;
  for (int k = 0; k < W; ++k) r.e[k] = s * a.e[k];
  return r;
}
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator/(const Tangent<T, W>& a, const T& s) {
  Tangent<T, W> r;
  for (int k = 0; k < W; ++k) r.e[k] = a.e[k] / s;
  return r;
}

}  // namespace knot::problems
