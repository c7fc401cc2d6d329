// Tangent<T, W>: W directional derivatives carried side by side, the tangent type of a
// Dual<T, Tangent<T, W>> that differentiates along W seeded directions in one evaluation.
//
// Only the vector-space operations a dual number's derivative rules need: t + t, t - t, -t,
// s * t, t * s, t / s (s a scalar T). Each acts on every component separately with the scalar
// operation itself, so component k of a rule's result is bit for bit what the single-direction
// Dual<T> gives for the direction seeded in component k (t / s divides; it never multiplies by 1/s).
// Trivial and KNOT_HD, like T, so arrays of them may live in device memory.
//
// On the host (GCC, clang), a double tangent's operations run on whole vector lanes (four components
// under AVX, two otherwise), each lane the scalar operation itself, so the bits are the loop's. As
// component loops, GCC's vectorizer grouped a Dual's W + 1 doubles with the value, which a product
// computes otherwise than the components, and left every component scalar (with cross3's lanes in
// dynamics.hpp, the iiwa14's step Hessian 1.7x faster). Device code keeps the loops: a thread is one
// lane anyway, and its compiler sees the code it saw before.
#pragma once

#include <type_traits>

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

#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__))
#define KNOT_TANGENT_HOST_LANES 1
#else
#define KNOT_TANGENT_HOST_LANES 0
#endif

namespace tangent_detail {
#if KNOT_TANGENT_HOST_LANES
#if defined(__AVX__)
typedef double Lane __attribute__((vector_size(32)));
#else
typedef double Lane __attribute__((vector_size(16)));
#endif
inline constexpr int kPer = int(sizeof(Lane) / sizeof(double));
// Whole lanes of a W-component tangent of T (none for float).
template <class T, int W>
inline constexpr int kLanes = std::is_same_v<T, double> ? W / kPer : 0;

// A lane (L = Lane) or one component (L = double) at e.
template <class L>
KNOT_DUAL_INLINE inline L load(const double* e) {
  L x;
  __builtin_memcpy(&x, e, sizeof(L));
  return x;
}
template <class L>
KNOT_DUAL_INLINE inline void store(double* e, const L& x) {
  __builtin_memcpy(e, &x, sizeof(L));
}
#endif
}  // namespace tangent_detail

// KNOT_TANGENT_LANES(T, W, k0, op): on the host, `op` for each whole lane, at component o (Lane
// operands through tangent_detail::load and store); then k0 is the first component left to a
// component loop (0 in device code and for T = float).
#if KNOT_TANGENT_HOST_LANES
#define KNOT_TANGENT_LANES(T, W, k0, op)                                            \
  int k0 = 0;                                                                       \
  if constexpr (::knot::problems::tangent_detail::kLanes<T, W> > 0) {               \
    constexpr int kPer_ = ::knot::problems::tangent_detail::kPer;                   \
    for (int o = 0; o < ::knot::problems::tangent_detail::kLanes<T, W> * kPer_; o += kPer_) { \
      op;                                                                           \
    }                                                                               \
    k0 = ::knot::problems::tangent_detail::kLanes<T, W> * kPer_;                    \
  }
#else
#define KNOT_TANGENT_LANES(T, W, k0, op) int k0 = 0;
#endif
// The lane loads and stores of an `op`.
#define KNOT_LANE_LOAD(p) ::knot::problems::tangent_detail::load<::knot::problems::tangent_detail::Lane>(p)
#define KNOT_LANE_STORE(p, x) ::knot::problems::tangent_detail::store(p, x)

template <class T, int W>
struct Tangent {
  static_assert(W >= 1);
  static constexpr int kWidth = W;
  T e[W];  // an aggregate with no constructors: trivial, and `Tangent{}` is zero

  KNOT_DUAL_INLINE KNOT_HD T& operator[](int k) { return e[k]; }
  KNOT_DUAL_INLINE KNOT_HD const T& operator[](int k) const { return e[k]; }

  KNOT_DUAL_INLINE KNOT_HD Tangent& operator+=(const Tangent& b) {
    KNOT_TANGENT_LANES(T, W, k0, KNOT_LANE_STORE(e + o, KNOT_LANE_LOAD(e + o) + KNOT_LANE_LOAD(b.e + o)))
    for (int k = k0; k < W; ++k) e[k] += b.e[k];
    return *this;
  }
  KNOT_DUAL_INLINE KNOT_HD Tangent& operator-=(const Tangent& b) {
    KNOT_TANGENT_LANES(T, W, k0, KNOT_LANE_STORE(e + o, KNOT_LANE_LOAD(e + o) - KNOT_LANE_LOAD(b.e + o)))
    for (int k = k0; k < W; ++k) e[k] -= b.e[k];
    return *this;
  }
};

template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator-(const Tangent<T, W>& a) {
  Tangent<T, W> r;
  KNOT_TANGENT_LANES(T, W, k0, KNOT_LANE_STORE(r.e + o, -KNOT_LANE_LOAD(a.e + o)))
  for (int k = k0; k < W; ++k) r.e[k] = -a.e[k];
  return r;
}
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator+(const Tangent<T, W>& a, const Tangent<T, W>& b) {
  Tangent<T, W> r;
  KNOT_TANGENT_LANES(T, W, k0, KNOT_LANE_STORE(r.e + o, KNOT_LANE_LOAD(a.e + o) + KNOT_LANE_LOAD(b.e + o)))
  for (int k = k0; k < W; ++k) r.e[k] = a.e[k] + b.e[k];
  return r;
}
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator-(const Tangent<T, W>& a, const Tangent<T, W>& b) {
  Tangent<T, W> r;
  KNOT_TANGENT_LANES(T, W, k0, KNOT_LANE_STORE(r.e + o, KNOT_LANE_LOAD(a.e + o) - KNOT_LANE_LOAD(b.e + o)))
  for (int k = k0; k < W; ++k) r.e[k] = a.e[k] - b.e[k];
  return r;
}
// The scalar is T itself (not deduced from it), so a double constant times a float tangent is an
// error rather than a silent widening.
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator*(const Tangent<T, W>& a, const T& s) {
  Tangent<T, W> r;
  KNOT_TANGENT_LANES(T, W, k0, KNOT_LANE_STORE(r.e + o, KNOT_LANE_LOAD(a.e + o) * s))
  for (int k = k0; k < W; ++k) r.e[k] = a.e[k] * s;
  return r;
}
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator*(const T& s, const Tangent<T, W>& a) {
  Tangent<T, W> r;
  KNOT_TANGENT_LANES(T, W, k0, KNOT_LANE_STORE(r.e + o, s * KNOT_LANE_LOAD(a.e + o)))
  for (int k = k0; k < W; ++k) r.e[k] = s * a.e[k];
  return r;
}
template <class T, int W>
KNOT_DUAL_INLINE KNOT_HD Tangent<T, W> operator/(const Tangent<T, W>& a, const T& s) {
  Tangent<T, W> r;
  KNOT_TANGENT_LANES(T, W, k0, KNOT_LANE_STORE(r.e + o, KNOT_LANE_LOAD(a.e + o) / s))
  for (int k = k0; k < W; ++k) r.e[k] = a.e[k] / s;
  return r;
}

}  // namespace knot::problems
