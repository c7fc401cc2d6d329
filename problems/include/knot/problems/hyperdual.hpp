// Second-order forward mode: HyperDual<N> carries a value, its gradient along N seeded directions
// and the N x N Hessian along them, so one evaluation of a model templated on its scalar gives every
// second derivative exactly (to rounding), with no step size.
//
// For a = a(w) with w = w0 + sum_i t_i e_i, the fields are v = a, g[i] = da/dt_i and the lower
// triangle of d2a/dt_i dt_j packed by rows (h[i (i + 1) / 2 + j], j <= i). Each pair (i, j) is
// stored once, so the Hessian read back is symmetric bit for bit by construction. The rules:
//   (a b)_ij  = a_ij b + a b_ij + (a_i b_j + a_j b_i)
//   (a / b)   = q,  q_i = (a_i - q b_i) / b,  q_ij = (a_ij - q b_ij - (q_i b_j + q_j b_i)) / b
//   phi(a)_ij = phi'(a) a_ij + phi''(a) a_i a_j
// Values are computed exactly as with plain scalars (true divisions, the same library calls), so
// branches in a model follow the same path. Comparisons look at the value only. A product costs
// about 2 N^2 flops: N is the number of seeded directions, a compile-time width; a caller picks the
// smallest width that holds its variables (model_adapter.hpp) and leaves unused directions zero.
//
// The elementary functions are found by argument-dependent lookup, as for Dual (dual.hpp), so a
// model written as `using std::sin; ... sin(x)` works for HyperDual<N> too.
#pragma once

#include <cmath>
#include <type_traits>

#include "knot/linalg/config.hpp"
#include "knot/problems/tangent.hpp"

namespace knot::problems {

// The widths second-order evaluations build (ModelAdapter::step_hessian, the device path's exact
// Hessian): the smallest of 3, 5, 6, 8, 12, 16, 24 that holds nw directions, else 0.
inline constexpr int kMaxSecondOrderWidth = 24;
KNOT_HD constexpr int second_order_width(int nw) {
  return nw <= 3 ? 3 : nw <= 5 ? 5 : nw <= 6 ? 6 : nw <= 8 ? 8 : nw <= 12 ? 12 : nw <= 16 ? 16 : nw <= 24 ? 24 : 0;
}

template <int N>
struct HyperDual {
  static_assert(N >= 1);
  static constexpr int kWidth = N;
  static constexpr int kPacked = N * (N + 1) / 2;
  // Packed index of the pair (i, j), j <= i.
  static constexpr int pair(int i, int j) { return i * (i + 1) / 2 + j; }

  double v;           // value
  double g[N];        // gradient along the seeded directions
  double h[kPacked];  // Hessian, lower triangle by rows

  // Trivial, like a built-in scalar; `HyperDual<N>{}` is zero.
  HyperDual() = default;
  // Implicit from a number (a constant: zero derivatives), so `S(0.5)` reads the same for every scalar.
  KNOT_DUAL_INLINE KNOT_HD constexpr HyperDual(double value) : v(value), g{}, h{} {}

  KNOT_DUAL_INLINE KNOT_HD HyperDual& operator+=(const HyperDual& b) {
    v += b.v;
    for (int i = 0; i < N; ++i) g[i] += b.g[i];
    for (int p = 0; p < kPacked; ++p) h[p] += b.h[p];
    return *this;
  }
  KNOT_DUAL_INLINE KNOT_HD HyperDual& operator-=(const HyperDual& b) {
    v -= b.v;
    for (int i = 0; i < N; ++i) g[i] -= b.g[i];
    for (int p = 0; p < kPacked; ++p) h[p] -= b.h[p];
    return *this;
  }
  KNOT_DUAL_INLINE KNOT_HD HyperDual& operator*=(const HyperDual& b) { return *this = *this * b; }
  KNOT_DUAL_INLINE KNOT_HD HyperDual& operator/=(const HyperDual& b) { return *this = *this / b; }
};

template <class U>
concept HyperDualScalar = std::is_arithmetic_v<U>;

namespace hyperdual_detail {

// phi(a) from phi(a.v) = f0, phi'(a.v) = f1, phi''(a.v) = f2.
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> chain(const HyperDual<N>& a, double f0, double f1, double f2) {
  HyperDual<N> r;
  r.v = f0;
  for (int i = 0; i < N; ++i) r.g[i] = f1 * a.g[i];
  int p = 0;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j <= i; ++j, ++p) r.h[p] = f1 * a.h[p] + f2 * (a.g[i] * a.g[j]);
  return r;
}

}  // namespace hyperdual_detail

// --- arithmetic ------------------------------------------------------------------------------------

template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator+(const HyperDual<N>& a) {
  return a;
}
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator-(const HyperDual<N>& a) {
  HyperDual<N> r;
  r.v = -a.v;
  for (int i = 0; i < N; ++i) r.g[i] = -a.g[i];
  for (int p = 0; p < HyperDual<N>::kPacked; ++p) r.h[p] = -a.h[p];
  return r;
}
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator+(const HyperDual<N>& a, const HyperDual<N>& b) {
  HyperDual<N> r = a;
  return r += b;
}
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator-(const HyperDual<N>& a, const HyperDual<N>& b) {
  HyperDual<N> r = a;
  return r -= b;
}
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator*(const HyperDual<N>& a, const HyperDual<N>& b) {
  HyperDual<N> r;
  r.v = a.v * b.v;
  for (int i = 0; i < N; ++i) r.g[i] = a.g[i] * b.v + a.v * b.g[i];
  int p = 0;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j <= i; ++j, ++p) r.h[p] = a.h[p] * b.v + a.v * b.h[p] + (a.g[i] * b.g[j] + a.g[j] * b.g[i]);
  return r;
}
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator/(const HyperDual<N>& a, const HyperDual<N>& b) {
  HyperDual<N> r;
  r.v = a.v / b.v;
  for (int i = 0; i < N; ++i) r.g[i] = (a.g[i] - r.v * b.g[i]) / b.v;
  int p = 0;
  for (int i = 0; i < N; ++i)
    for (int j = 0; j <= i; ++j, ++p) r.h[p] = (a.h[p] - r.v * b.h[p] - (r.g[i] * b.g[j] + r.g[j] * b.g[i])) / b.v;
  return r;
}

// Mixed with a plain number (a constant).
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator+(const HyperDual<N>& a, U s) {
  HyperDual<N> r = a;
  r.v += double(s);
  return r;
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator+(U s, const HyperDual<N>& a) {
  HyperDual<N> r = a;
  r.v = double(s) + a.v;
  return r;
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator-(const HyperDual<N>& a, U s) {
  HyperDual<N> r = a;
  r.v -= double(s);
  return r;
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator-(U s, const HyperDual<N>& a) {
  HyperDual<N> r = -a;
  r.v = double(s) - a.v;
  return r;
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator*(const HyperDual<N>& a, U s) {
  const double c = double(s);
  HyperDual<N> r;
  r.v = a.v * c;
  for (int i = 0; i < N; ++i) r.g[i] = a.g[i] * c;
  for (int p = 0; p < HyperDual<N>::kPacked; ++p) r.h[p] = a.h[p] * c;
  return r;
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator*(U s, const HyperDual<N>& a) {
  const double c = double(s);
  HyperDual<N> r;
  r.v = c * a.v;
  for (int i = 0; i < N; ++i) r.g[i] = c * a.g[i];
  for (int p = 0; p < HyperDual<N>::kPacked; ++p) r.h[p] = c * a.h[p];
  return r;
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator/(const HyperDual<N>& a, U s) {
  const double c = double(s);
  HyperDual<N> r;
  r.v = a.v / c;
  for (int i = 0; i < N; ++i) r.g[i] = a.g[i] / c;
  for (int p = 0; p < HyperDual<N>::kPacked; ++p) r.h[p] = a.h[p] / c;
  return r;
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> operator/(U s, const HyperDual<N>& a) {
  // c / a: phi(t) = c / t, phi' = -c / t^2 = -q / t, phi'' = 2 c / t^3 = -2 phi' / t.
  const double q = double(s) / a.v;
  const double d1 = -q / a.v;
  return hyperdual_detail::chain(a, q, d1, -2 * d1 / a.v);
}

// --- comparisons (value only) ----------------------------------------------------------------------

#define KNOT_HYPERDUAL_COMPARE(op)                                                          \
  template <int N>                                                                          \
  KNOT_DUAL_INLINE KNOT_HD bool operator op(const HyperDual<N>& a, const HyperDual<N>& b) { \
    return a.v op b.v;                                                                      \
  }                                                                                         \
  template <int N, HyperDualScalar U>                                                       \
  KNOT_DUAL_INLINE KNOT_HD bool operator op(const HyperDual<N>& a, U s) {                   \
    return a.v op double(s);                                                                \
  }                                                                                         \
  template <int N, HyperDualScalar U>                                                       \
  KNOT_DUAL_INLINE KNOT_HD bool operator op(U s, const HyperDual<N>& a) {                   \
    return double(s) op a.v;                                                                \
  }
KNOT_HYPERDUAL_COMPARE(==)
KNOT_HYPERDUAL_COMPARE(!=)
KNOT_HYPERDUAL_COMPARE(<)
KNOT_HYPERDUAL_COMPARE(>)
KNOT_HYPERDUAL_COMPARE(<=)
KNOT_HYPERDUAL_COMPARE(>=)
#undef KNOT_HYPERDUAL_COMPARE

// --- elementary functions: phi(v), phi'(v), phi''(v) -----------------------------------------------

template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> sin(const HyperDual<N>& a) {
  using std::cos;
  using std::sin;
  const double s = sin(a.v);
  return hyperdual_detail::chain(a, s, cos(a.v), -s);
}
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> cos(const HyperDual<N>& a) {
  using std::cos;
  using std::sin;
  const double c = cos(a.v);
  return hyperdual_detail::chain(a, c, -sin(a.v), -c);
}
// tan' = 1 + t^2, tan'' = 2 t (1 + t^2).
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> tan(const HyperDual<N>& a) {
  using std::tan;
  const double t = tan(a.v);
  const double d1 = 1.0 + t * t;
  return hyperdual_detail::chain(a, t, d1, 2 * t * d1);
}
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> exp(const HyperDual<N>& a) {
  using std::exp;
  const double e = exp(a.v);
  return hyperdual_detail::chain(a, e, e, e);
}
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> log(const HyperDual<N>& a) {
  using std::log;
  const double d1 = 1.0 / a.v;
  return hyperdual_detail::chain(a, log(a.v), d1, -d1 * d1);
}
// sqrt' = 1 / (2 s), sqrt'' = -1 / (4 s^3) = -sqrt' / (2 v).
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> sqrt(const HyperDual<N>& a) {
  using std::sqrt;
  const double s = sqrt(a.v);
  const double d1 = 1.0 / (2 * s);
  return hyperdual_detail::chain(a, s, d1, -d1 / (2 * a.v));
}
// a^p for a constant exponent p.
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> pow(const HyperDual<N>& a, double p) {
  using std::pow;
  return hyperdual_detail::chain(a, pow(a.v, p), p * pow(a.v, p - 1), p * (p - 1) * pow(a.v, p - 2));
}
// tanh' = 1 - t^2, tanh'' = -2 t (1 - t^2).
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> tanh(const HyperDual<N>& a) {
  using std::tanh;
  const double t = tanh(a.v);
  const double d1 = 1.0 - t * t;
  return hyperdual_detail::chain(a, t, d1, -2 * t * d1);
}
// |a|; at a = 0 the right-hand derivatives (+g, +h).
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> abs(const HyperDual<N>& a) {
  return a.v < 0.0 ? -a : a;
}
// atan2(y, x): the angle's value from the library; its derivatives from atan of the smaller ratio
// (y / x where |x| >= |y|, else -atan(x / y)), which differ from atan2 by a constant.
// atan' = 1 / (1 + t^2), atan'' = -2 t / (1 + t^2)^2.
template <int N>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> atan2(const HyperDual<N>& y, const HyperDual<N>& x) {
  using std::abs;
  using std::atan2;
  const bool x_major = abs(x.v) >= abs(y.v);
  const HyperDual<N> t = x_major ? y / x : x / y;
  const double d1 = 1.0 / (1.0 + t.v * t.v);
  HyperDual<N> r = hyperdual_detail::chain(t, 0.0, d1, -2 * t.v * d1 * d1);
  if (!x_major) r = -r;
  r.v = atan2(y.v, x.v);
  return r;
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> atan2(const HyperDual<N>& y, U x) {
  return atan2(y, HyperDual<N>(double(x)));
}
template <int N, HyperDualScalar U>
KNOT_DUAL_INLINE KNOT_HD HyperDual<N> atan2(U y, const HyperDual<N>& x) {
  return atan2(HyperDual<N>(double(y)), x);
}

}  // namespace knot::problems
