// Forward-mode dual numbers: a + b eps with eps^2 = 0, so g(a + b eps) = g(a) + g'(a) b eps.
//
// Dual<T>{v, d} carries a value v and one directional derivative d. Seeding d = 1 on one input and
// evaluating a model templated on its scalar yields that column of the Jacobian exactly (to
// rounding), with no step size to tune. Comparisons look at the value only, so branches in a model
// follow the same path as with plain scalars. Every function is KNOT_HD: models differentiate in
// device code the same way as on the host.
//
// Dual<T, D> takes the derivative's type D as well: D = T (the default) is the one direction above;
// D = Tangent<T, W> (tangent.hpp) carries W directions through one evaluation, so the values (every
// sin, cos, division of the model) are computed once for W Jacobian columns. The derivative rules
// below are written once for both: with D a tangent, each rule's expression runs per component with
// the same scalar operations in the same order, so component k is bit for bit the single-direction
// result for the direction seeded there. (That holds as long as the compiler neither reassociates
// nor contracts a * b + c into an FMA differently in the two instantiations: no -ffast-math, and
// -ffp-contract=off where the instruction set has FMA, as knot_problems is built.)
//
// The elementary functions are found by argument-dependent lookup, so a model written as
//   using std::sin;  ...  sin(x)
// works for S = float, double and Dual<T, D> alike.
#pragma once

#include <cmath>
#include <type_traits>

#include "knot/linalg/config.hpp"
#include "knot/problems/tangent.hpp"

namespace knot::problems {

template <class T, class D = T>
struct Dual {
  T v;  // value
  D d;  // derivative along the seeded direction(s)

  // Trivial, like a built-in scalar (so Dual arrays may live in CUDA shared memory); `Dual<T, D>{}`
  // is zero.
  Dual() = default;
  // Implicit from a scalar (a constant: zero derivative), so `S(0.5)` and `S x = 0` read the same
  // for every scalar type.
  KNOT_HD constexpr Dual(T value) : v(value), d() {}
  KNOT_HD constexpr Dual(T value, D derivative) : v(value), d(derivative) {}

  KNOT_DUAL_INLINE KNOT_HD Dual& operator+=(const Dual& b) {
    v += b.v;
    d += b.d;
    return *this;
  }
  KNOT_DUAL_INLINE KNOT_HD Dual& operator-=(const Dual& b) {
    v -= b.v;
    d -= b.d;
    return *this;
  }
  KNOT_DUAL_INLINE KNOT_HD Dual& operator*=(const Dual& b) {
    d = d * b.v + v * b.d;
    v *= b.v;
    return *this;
  }
  KNOT_DUAL_INLINE KNOT_HD Dual& operator/=(const Dual& b) { return *this = *this / b; }
};

template <class U>
concept DualScalar = std::is_arithmetic_v<U>;

// --- arithmetic ------------------------------------------------------------------------------------

template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator+(const Dual<T, D>& a) {
  return a;
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator-(const Dual<T, D>& a) {
  return {-a.v, -a.d};
}

template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator+(const Dual<T, D>& a, const Dual<T, D>& b) {
  return {a.v + b.v, a.d + b.d};
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator-(const Dual<T, D>& a, const Dual<T, D>& b) {
  return {a.v - b.v, a.d - b.d};
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator*(const Dual<T, D>& a, const Dual<T, D>& b) {
  return {a.v * b.v, a.d * b.v + a.v * b.d};
}
// Values are computed exactly as with plain scalars (a true division, not a reciprocal times), so a
// dual evaluation reproduces the plain one bit for bit.
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator/(const Dual<T, D>& a, const Dual<T, D>& b) {
  const T q = a.v / b.v;
  return {q, (a.d - q * b.d) / b.v};
}

// Mixed with a plain number (any arithmetic type, converted to T): a constant with zero derivative.
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator+(const Dual<T, D>& a, U s) {
  return {a.v + T(s), a.d};
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator+(U s, const Dual<T, D>& a) {
  return {T(s) + a.v, a.d};
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator-(const Dual<T, D>& a, U s) {
  return {a.v - T(s), a.d};
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator-(U s, const Dual<T, D>& a) {
  return {T(s) - a.v, -a.d};
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator*(const Dual<T, D>& a, U s) {
  return {a.v * T(s), a.d * T(s)};
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator*(U s, const Dual<T, D>& a) {
  return {T(s) * a.v, T(s) * a.d};
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator/(const Dual<T, D>& a, U s) {
  return {a.v / T(s), a.d / T(s)};
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> operator/(U s, const Dual<T, D>& a) {
  const T q = T(s) / a.v;
  return {q, -q * a.d / a.v};
}

// --- comparisons (value only) ----------------------------------------------------------------------

#define KNOT_DUAL_COMPARE(op)                                                           \
  template <class T, class D>                                                           \
  KNOT_DUAL_INLINE KNOT_HD bool operator op(const Dual<T, D>& a, const Dual<T, D>& b) { \
    return a.v op b.v;                                                                  \
  }                                                                                     \
  template <class T, class D, DualScalar U>                                             \
  KNOT_DUAL_INLINE KNOT_HD bool operator op(const Dual<T, D>& a, U s) {                 \
    return a.v op T(s);                                                                 \
  }                                                                                     \
  template <class T, class D, DualScalar U>                                             \
  KNOT_DUAL_INLINE KNOT_HD bool operator op(U s, const Dual<T, D>& a) {                 \
    return T(s) op a.v;                                                                 \
  }
KNOT_DUAL_COMPARE(==)
KNOT_DUAL_COMPARE(!=)
KNOT_DUAL_COMPARE(<)
KNOT_DUAL_COMPARE(>)
KNOT_DUAL_COMPARE(<=)
KNOT_DUAL_COMPARE(>=)
#undef KNOT_DUAL_COMPARE

// --- elementary functions: g(v) and g'(v) d --------------------------------------------------------

template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> sin(const Dual<T, D>& a) {
  using std::cos;
  using std::sin;
  return {sin(a.v), cos(a.v) * a.d};
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> cos(const Dual<T, D>& a) {
  using std::cos;
  using std::sin;
  return {cos(a.v), -sin(a.v) * a.d};
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> tan(const Dual<T, D>& a) {
  using std::tan;
  const T t = tan(a.v);
  return {t, (T(1) + t * t) * a.d};
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> exp(const Dual<T, D>& a) {
  using std::exp;
  const T e = exp(a.v);
  return {e, e * a.d};
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> log(const Dual<T, D>& a) {
  using std::log;
  return {log(a.v), a.d / a.v};
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> sqrt(const Dual<T, D>& a) {
  using std::sqrt;
  const T s = sqrt(a.v);
  return {s, a.d / (T(2) * s)};
}
// a^p for a constant exponent p.
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> pow(const Dual<T, D>& a, double p) {
  using std::pow;
  const T e = T(p);
  return {pow(a.v, e), e * pow(a.v, e - T(1)) * a.d};
}
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> tanh(const Dual<T, D>& a) {
  using std::tanh;
  const T t = tanh(a.v);
  return {t, (T(1) - t * t) * a.d};
}
// |a|; at a = 0 the derivative taken is the right-hand one (+d).
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> abs(const Dual<T, D>& a) {
  return a.v < T(0) ? Dual<T, D>{-a.v, -a.d} : a;
}
// atan2(y, x): the angle of (x, y); d = (x dy - y dx) / (x^2 + y^2).
template <class T, class D>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> atan2(const Dual<T, D>& y, const Dual<T, D>& x) {
  using std::atan2;
  const T r2 = x.v * x.v + y.v * y.v;
  return {atan2(y.v, x.v), (x.v * y.d - y.v * x.d) / r2};
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> atan2(const Dual<T, D>& y, U x) {
  return atan2(y, Dual<T, D>(T(x)));
}
template <class T, class D, DualScalar U>
KNOT_DUAL_INLINE KNOT_HD Dual<T, D> atan2(U y, const Dual<T, D>& x) {
  return atan2(Dual<T, D>(T(y)), x);
}

}  // namespace knot::problems
