// Forward-mode dual numbers: a + b eps with eps^2 = 0, so g(a + b eps) = g(a) + g'(a) b eps.
//
// Dual<T>{v, d} carries a value v and one directional derivative d. Seeding d = 1 on one input and
// evaluating a model templated on its scalar yields that column of the Jacobian exactly (to
// rounding), with no step size to tune. Comparisons look at the value only, so branches in a model
// follow the same path as with plain scalars. Every function is KNOT_HD: models differentiate in
// device code the same way as on the host.
//
// The elementary functions are found by argument-dependent lookup, so a model written as
//   using std::sin;  ...  sin(x)
// works for S = float, double and Dual<T> alike.
#pragma once

#include <cmath>
#include <type_traits>

#include "knot/linalg/config.hpp"

namespace knot::problems {

template <class T>
struct Dual {
  T v;  // value
  T d;  // derivative along the seeded direction

  // Trivial, like a built-in scalar (so Dual arrays may live in CUDA shared memory); `Dual<T>{}`
  // is zero.
  Dual() = default;
  // Implicit from a scalar (a constant: zero derivative), so `S(0.5)` and `S x = 0` read the same
  // for every scalar type.
  KNOT_HD constexpr Dual(T value, T derivative = T(0)) : v(value), d(derivative) {}

  KNOT_HD Dual& operator+=(const Dual& b) {
    v += b.v;
    d += b.d;
    return *this;
  }
  KNOT_HD Dual& operator-=(const Dual& b) {
    v -= b.v;
    d -= b.d;
    return *this;
  }
  KNOT_HD Dual& operator*=(const Dual& b) {
    d = d * b.v + v * b.d;
    v *= b.v;
    return *this;
  }
  KNOT_HD Dual& operator/=(const Dual& b) { return *this = *this / b; }
};

template <class U>
concept DualScalar = std::is_arithmetic_v<U>;

// --- arithmetic ------------------------------------------------------------------------------------

template <class T>
KNOT_HD Dual<T> operator+(const Dual<T>& a) {
  return a;
}
template <class T>
KNOT_HD Dual<T> operator-(const Dual<T>& a) {
  return {-a.v, -a.d};
}

template <class T>
KNOT_HD Dual<T> operator+(const Dual<T>& a, const Dual<T>& b) {
  return {a.v + b.v, a.d + b.d};
}
template <class T>
KNOT_HD Dual<T> operator-(const Dual<T>& a, const Dual<T>& b) {
  return {a.v - b.v, a.d - b.d};
}
template <class T>
KNOT_HD Dual<T> operator*(const Dual<T>& a, const Dual<T>& b) {
  return {a.v * b.v, a.d * b.v + a.v * b.d};
}
// Values are computed exactly as with plain scalars (a true division, not a reciprocal times), so a
// dual evaluation reproduces the plain one bit for bit.
template <class T>
KNOT_HD Dual<T> operator/(const Dual<T>& a, const Dual<T>& b) {
  const T q = a.v / b.v;
  return {q, (a.d - q * b.d) / b.v};
}

// Mixed with a plain number (any arithmetic type, converted to T): a constant with zero derivative.
template <class T, DualScalar U>
KNOT_HD Dual<T> operator+(const Dual<T>& a, U s) {
  return {a.v + T(s), a.d};
}
template <class T, DualScalar U>
KNOT_HD Dual<T> operator+(U s, const Dual<T>& a) {
  return {T(s) + a.v, a.d};
}
template <class T, DualScalar U>
KNOT_HD Dual<T> operator-(const Dual<T>& a, U s) {
  return {a.v - T(s), a.d};
}
template <class T, DualScalar U>
KNOT_HD Dual<T> operator-(U s, const Dual<T>& a) {
  return {T(s) - a.v, -a.d};
}
template <class T, DualScalar U>
KNOT_HD Dual<T> operator*(const Dual<T>& a, U s) {
  return {a.v * T(s), a.d * T(s)};
}
template <class T, DualScalar U>
KNOT_HD Dual<T> operator*(U s, const Dual<T>& a) {
  return {T(s) * a.v, T(s) * a.d};
}
template <class T, DualScalar U>
KNOT_HD Dual<T> operator/(const Dual<T>& a, U s) {
  return {a.v / T(s), a.d / T(s)};
}
template <class T, DualScalar U>
KNOT_HD Dual<T> operator/(U s, const Dual<T>& a) {
  const T q = T(s) / a.v;
  return {q, -q * a.d / a.v};
}

// --- comparisons (value only) ----------------------------------------------------------------------

#define KNOT_DUAL_COMPARE(op)                                    \
  template <class T>                                             \
  KNOT_HD bool operator op(const Dual<T>& a, const Dual<T>& b) { \
    return a.v op b.v;                                           \
  }                                                              \
  template <class T, DualScalar U>                               \
  KNOT_HD bool operator op(const Dual<T>& a, U s) {              \
    return a.v op T(s);                                          \
  }                                                              \
  template <class T, DualScalar U>                               \
  KNOT_HD bool operator op(U s, const Dual<T>& a) {              \
    return T(s) op a.v;                                          \
  }
KNOT_DUAL_COMPARE(==)
KNOT_DUAL_COMPARE(!=)
KNOT_DUAL_COMPARE(<)
KNOT_DUAL_COMPARE(>)
KNOT_DUAL_COMPARE(<=)
KNOT_DUAL_COMPARE(>=)
#undef KNOT_DUAL_COMPARE

// --- elementary functions: g(v) and g'(v) d --------------------------------------------------------

template <class T>
KNOT_HD Dual<T> sin(const Dual<T>& a) {
  using std::cos;
  using std::sin;
  return {sin(a.v), cos(a.v) * a.d};
}
template <class T>
KNOT_HD Dual<T> cos(const Dual<T>& a) {
  using std::cos;
  using std::sin;
  return {cos(a.v), -sin(a.v) * a.d};
}
template <class T>
KNOT_HD Dual<T> tan(const Dual<T>& a) {
  using std::tan;
  const T t = tan(a.v);
  return {t, (T(1) + t * t) * a.d};
}
template <class T>
KNOT_HD Dual<T> exp(const Dual<T>& a) {
  using std::exp;
  const T e = exp(a.v);
  return {e, e * a.d};
}
template <class T>
KNOT_HD Dual<T> log(const Dual<T>& a) {
  using std::log;
  return {log(a.v), a.d / a.v};
}
template <class T>
KNOT_HD Dual<T> sqrt(const Dual<T>& a) {
  using std::sqrt;
  const T s = sqrt(a.v);
  return {s, a.d / (T(2) * s)};
}
// a^p for a constant exponent p.
template <class T>
KNOT_HD Dual<T> pow(const Dual<T>& a, double p) {
  using std::pow;
  const T e = T(p);
  return {pow(a.v, e), e * pow(a.v, e - T(1)) * a.d};
}
template <class T>
KNOT_HD Dual<T> tanh(const Dual<T>& a) {
  using std::tanh;
  const T t = tanh(a.v);
  return {t, (T(1) - t * t) * a.d};
}
// |a|; at a = 0 the derivative taken is the right-hand one (+d).
template <class T>
KNOT_HD Dual<T> abs(const Dual<T>& a) {
  return a.v < T(0) ? Dual<T>{-a.v, -a.d} : a;
}
// atan2(y, x): the angle of (x, y); d = (x dy - y dx) / (x^2 + y^2).
template <class T>
KNOT_HD Dual<T> atan2(const Dual<T>& y, const Dual<T>& x) {
  using std::atan2;
  const T r2 = x.v * x.v + y.v * y.v;
  return {atan2(y.v, x.v), (x.v * y.d - y.v * x.d) / r2};
}
template <class T, DualScalar U>
KNOT_HD Dual<T> atan2(const Dual<T>& y, U x) {
  return atan2(y, Dual<T>(T(x)));
}
template <class T, DualScalar U>
KNOT_HD Dual<T> atan2(U y, const Dual<T>& x) {
  return atan2(Dual<T>(T(y)), x);
}

}  // namespace knot::problems
