// Expressions written in a problem file, compiled to a flat instruction tape.
//
// An expression ("(F + m*l*sin(theta)*omega^2) / denom") is parsed once at load (expression.cpp)
// into a directed acyclic graph with common subexpressions shared and constants folded (parameters
// are constants), then emitted as a tape: a plain array of ExprInstr records over a register file,
// in an order where every operand is computed before it is read. Registers are reused once their
// last reader has run, so a model's whole evaluation fits kExprMaxRegisters live values. The input
// loads lead the tape (a loop of copies, no dispatch), and a product that only one +, -, * or / reads
// is fused into that reader (one instruction, the same two roundings).
//
// evaluate<S>() runs a tape on any scalar of the model templates (double, Dual for Jacobians,
// HyperDual for Hessians): no virtual calls, no allocation, no standard containers, so the same
// function is callable in device code (KNOT_HD) with the register file in local memory.
//
//   x[nx], u[nu]   the inputs (states and controls)
//   out[n_outputs] out[i] = the value of output i
//
// evaluate_jacobian<W>() gives the outputs' Jacobian seeding only the inputs they read (the tape's
// Jacobian structure, found at compile time): what dynamics_jacobian of an expression model runs.
//
// ExpressionDynamics is a template model (model_adapter.hpp) whose f is one tape output per state.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/dual.hpp"
#include "knot/problems/hyperdual.hpp"
#include "knot/problems/error.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems {

// Live values one evaluation may hold at once (the register file lives on the stack, or in a
// device thread's local memory).
inline constexpr int kExprMaxRegisters = 64;

enum class ExprOp : std::uint8_t {
  Const,     // r = k
  State,     // r = x[n]
  Control,   // r = u[n]
  Add,       // r = a + b
  Sub,       // r = a - b
  Mul,       // r = a * b
  Div,       // r = a / b
  AddK,      // r = a + k (also a - k, as a + (-k), which is the same number)
  KSub,      // r = k - a
  MulK,      // r = a * k
  DivK,      // r = a / k
  KDiv,      // r = k / a
  Neg,       // r = -a
  PowInt,    // r = a^n, n an integer (repeated products: a^2 is a * a exactly)
  PowConst,  // r = a^k, k a constant that is not an integer
  Pow,       // r = exp(b log(a)), a variable exponent
  Sin,
  Cos,
  Tan,
  Exp,
  Log,
  Sqrt,
  Tanh,
  Abs,
  Atan2,  // r = atan2(a, b)
  Min,    // r = a < b ? a : b (the value decides; the derivative is that branch's)
  Max,
  SinCos,  // r = sin(a) and reg[b] = cos(a): both of one argument share one sincos (emitted only)
  // Fused (emitted only): t = a * b (Mul*) or t = a * k (MulK*), then r = t + c, t - c, c - t,
  // t * c, t / c or c / t with c = reg[n]; t is rounded as the product alone would be.
  MulAdd,
  MulSub,
  MulRSub,
  MulMul,
  MulDiv,
  MulRDiv,
  MulKAdd,
  MulKSub,
  MulKRSub,
  MulKMul,
  MulKDiv,
  MulKRDiv,
};

// The fused ops in the order of their consumers: fused_consumer(op) is 0..5 for + - (rsub) * / (rdiv).
KNOT_HD constexpr bool is_fused(ExprOp op) { return op >= ExprOp::MulAdd && op <= ExprOp::MulKRDiv; }
KNOT_HD constexpr bool fused_scaled(ExprOp op) { return op >= ExprOp::MulKAdd; }
KNOT_HD constexpr int fused_consumer(ExprOp op) { return (int(op) - int(ExprOp::MulAdd)) % 6; }

struct ExprInstr {
  ExprOp op = ExprOp::Const;
  std::uint8_t dst = 0, a = 0, b = 0;  // registers
  std::int32_t n = 0;                  // input index (State, Control), exponent (PowInt), or register c (fused)
  double k = 0;                        // constant (Const, the *K ops, PowConst)
};

// A compiled tape: non-owning, trivially copyable (it is copied into device memory as is).
struct ExprTape {
  const ExprInstr* code = nullptr;
  int size = 0;
  const std::uint8_t* outputs = nullptr;  // the register holding each output after the last instruction
  int n_outputs = 0;
  int registers = 0;  // <= kExprMaxRegisters
  int loads = 0;      // code[0, loads) are the input loads (State, Control), the rest none
  // The structure of the Jacobian over the inputs w = (x, u) (w_j = x_j for j < nx, u_(j-nx) after),
  // known at compile time: output_input[i] is j when output i is w_j itself (its row is e_j'), -1 when
  // it is computed; the lanes are the inputs some computed output depends on, ascending
  // (lane_input[l] = j, input_lane[j] = l or -1; nx + nu entries). Only the lanes need seeding.
  const std::int32_t* output_input = nullptr;
  const std::int32_t* lane_input = nullptr;
  const std::int32_t* input_lane = nullptr;
  int lanes = 0;
  // The structurally nonzero entries of the computed outputs' rows, the ones a sweep writes (the rest
  // are zero, or the ones of the copies): (entry i + j n_outputs of [d/dx | d/du], column-major, the
  // register of output i, the lane of input j) triples.
  const std::int32_t* nonzero = nullptr;  // 3 * nonzeros
  int nonzeros = 0;
};

namespace expr_detail {

template <class S>
KNOT_HD S pow_int(const S& a, int n) {
  // Square-and-multiply in a fixed order; a^1 is a, a^2 is a * a.
  if (n == 2) return a * a;
  unsigned m = n < 0 ? unsigned(-(long long)n) : unsigned(n);
  S result = S(1.0), base = a;
  bool first = true;
  while (m != 0) {
    if (m & 1u) {
      result = first ? base : result * base;
      first = false;
    }
    m >>= 1;
    if (m != 0) base = base * base;
  }
  return n < 0 ? S(1.0) / result : result;
}

// One operation on values already loaded (the loader folds constants with this same function).
// An operand that is a constant is an immediate (the *K ops): a dual times a number costs a third of
// a dual times a dual, and no register is loaded with it.
// r = t op c for the consumer of a fused op (fused_consumer).
template <class S>
KNOT_HD S consume(int consumer, const S& t, const S& c) {
  switch (consumer) {
    case 0:
      return t + c;
    case 1:
      return t - c;
    case 2:
      return c - t;
    case 3:
      return t * c;
    case 4:
      return t / c;
    default:
      return c / t;
  }
}

// c: register n, read by the fused ops only.
template <class S>
KNOT_HD S apply(const ExprInstr& in, const S& a, const S& b, const S& c) {
  using std::abs;
  using std::atan2;
  using std::cos;
  using std::exp;
  using std::log;
  using std::pow;
  using std::sin;
  using std::sqrt;
  using std::tan;
  using std::tanh;
  switch (in.op) {
    case ExprOp::Add:
      return a + b;
    case ExprOp::Sub:
      return a - b;
    case ExprOp::Mul:
      return a * b;
    case ExprOp::Div:
      return a / b;
    case ExprOp::AddK:
      return a + in.k;
    case ExprOp::KSub:
      return in.k - a;
    case ExprOp::MulK:
      return a * in.k;
    case ExprOp::DivK:
      return a / in.k;
    case ExprOp::KDiv:
      return in.k / a;
    case ExprOp::Neg:
      return -a;
    case ExprOp::PowInt:
      return pow_int(a, in.n);
    case ExprOp::PowConst:
      return pow(a, in.k);
    case ExprOp::Pow:
      return exp(b * log(a));
    case ExprOp::Sin:
      return sin(a);
    case ExprOp::Cos:
      return cos(a);
    case ExprOp::Tan:
      return tan(a);
    case ExprOp::Exp:
      return exp(a);
    case ExprOp::Log:
      return log(a);
    case ExprOp::Sqrt:
      return sqrt(a);
    case ExprOp::Tanh:
      return tanh(a);
    case ExprOp::Abs:
      return abs(a);
    case ExprOp::Atan2:
      return atan2(a, b);
    case ExprOp::Min:
      return b < a ? b : a;
    case ExprOp::Max:
      return a < b ? b : a;
    default:
      if (is_fused(in.op)) {
        const S t = fused_scaled(in.op) ? a * in.k : a * b;
        return consume(fused_consumer(in.op), t, c);
      }
      return S(in.k);  // Const; inputs never reach here
  }
}

template <class S>
KNOT_HD S apply(const ExprInstr& in, const S& a, const S& b) {
  return apply(in, a, b, b);
}


// s = sin(a), c = cos(a) in one call: GCC merges a sin and a cos of one value into a sincos only
// when the code around them lets it (in the dual loop it stopped doing so, one call more). glibc's
// sincos and CUDA's give the bits sin and cos give.
// (A template, so that it is inline under nvcc too, where KNOT_HD does not say inline.)
template <class T = double>
KNOT_HD void sin_cos(T a, T& s, T& c) {
#if defined(__CUDA_ARCH__)
  sincos(a, &s, &c);
#elif defined(__GNUC__) && !defined(__clang__)  // clang has no __builtin_sincos
  __builtin_sincos(a, &s, &c);
#else
  s = std::sin(a);
  c = std::cos(a);
#endif
}

// --- second-order duals in place -----------------------------------------------------------------
// A HyperDual<5> is 21 doubles: through the generic switch every instruction builds its result in a
// temporary and copies it to the register, and the compiler leaves the triangular loops rolled in
// a function this large (the built-in models, a few operations inlined, get them unrolled). These
// kernels write the destination register directly (it may be an operand: the tape reuses
// registers): the operands' gradients are read into locals first, then h, g and v are written, each
// element after the reads of the same element. The formulas are hyperdual.hpp's, term for term, so
// the results are the operators' bit for bit.

template <class S>
inline constexpr bool kIsHyperDual = false;
template <int N>
inline constexpr bool kIsHyperDual<HyperDual<N>> = true;

// Device code and clang take `#pragma unroll`, GCC its own spelling; the host pass of a .cu file
// none (its front end warns on GCC's, the host compiler on nvcc's).
#if defined(__CUDA_ARCH__) || (defined(__clang__) && !defined(__CUDACC__))
#define KNOT_EXPR_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__CUDACC__)
#define KNOT_EXPR_UNROLL _Pragma("GCC unroll 64")
#else
#define KNOT_EXPR_UNROLL
#endif

template <int N>
KNOT_HD void hd_mul(HyperDual<N>& r, const HyperDual<N>& a, const HyperDual<N>& b) {
  const double av = a.v, bv = b.v;
  double ag[N], bg[N];
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) {
    ag[i] = a.g[i];
    bg[i] = b.g[i];
  }
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) {
    KNOT_EXPR_UNROLL for (int j = 0; j <= i; ++j) {
      const int p = i * (i + 1) / 2 + j;
      r.h[p] = a.h[p] * bv + av * b.h[p] + (ag[i] * bg[j] + ag[j] * bg[i]);
    }
  }
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) r.g[i] = ag[i] * bv + av * bg[i];
  r.v = av * bv;
}

template <int N>
KNOT_HD void hd_div(HyperDual<N>& r, const HyperDual<N>& a, const HyperDual<N>& b) {
  const double bv = b.v, q = a.v / bv;
  double qg[N], bg[N];
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) {
    bg[i] = b.g[i];
    qg[i] = (a.g[i] - q * bg[i]) / bv;
  }
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) {
    KNOT_EXPR_UNROLL for (int j = 0; j <= i; ++j) {
      const int p = i * (i + 1) / 2 + j;
      r.h[p] = (a.h[p] - q * b.h[p] - (qg[i] * bg[j] + qg[j] * bg[i])) / bv;
    }
  }
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) r.g[i] = qg[i];
  r.v = q;
}

// r = a + sign b (sign +1 or -1, the operators' += and -=).
template <int N, bool kSub>
KNOT_HD void hd_add(HyperDual<N>& r, const HyperDual<N>& a, const HyperDual<N>& b) {
  constexpr int P = HyperDual<N>::kPacked;
  KNOT_EXPR_UNROLL for (int p = 0; p < P; ++p) r.h[p] = kSub ? a.h[p] - b.h[p] : a.h[p] + b.h[p];
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) r.g[i] = kSub ? a.g[i] - b.g[i] : a.g[i] + b.g[i];
  r.v = kSub ? a.v - b.v : a.v + b.v;
}

// r = a c (kDiv: a / c), c a number.
template <int N, bool kDiv>
KNOT_HD void hd_scale(HyperDual<N>& r, const HyperDual<N>& a, double c) {
  constexpr int P = HyperDual<N>::kPacked;
  KNOT_EXPR_UNROLL for (int p = 0; p < P; ++p) r.h[p] = kDiv ? a.h[p] / c : a.h[p] * c;
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) r.g[i] = kDiv ? a.g[i] / c : a.g[i] * c;
  r.v = kDiv ? a.v / c : a.v * c;
}

// r = a with r.v = v (kNeg: r = -a with r.v = v).
template <int N, bool kNeg>
KNOT_HD void hd_shift(HyperDual<N>& r, const HyperDual<N>& a, double v) {
  constexpr int P = HyperDual<N>::kPacked;
  KNOT_EXPR_UNROLL for (int p = 0; p < P; ++p) r.h[p] = kNeg ? -a.h[p] : a.h[p];
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) r.g[i] = kNeg ? -a.g[i] : a.g[i];
  r.v = v;
}

// r = phi(a) from phi(a.v) = f0, phi'(a.v) = f1, phi''(a.v) = f2 (hyperdual_detail::chain).
template <int N>
KNOT_HD void hd_chain(HyperDual<N>& r, const HyperDual<N>& a, double f0, double f1, double f2) {
  double ag[N];
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) ag[i] = a.g[i];
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) {
    KNOT_EXPR_UNROLL for (int j = 0; j <= i; ++j) {
      const int p = i * (i + 1) / 2 + j;
      r.h[p] = f1 * a.h[p] + f2 * (ag[i] * ag[j]);
    }
  }
  KNOT_EXPR_UNROLL for (int i = 0; i < N; ++i) r.g[i] = f1 * ag[i];
  r.v = f0;
}

// One instruction on HyperDual registers; false for the ops left to the generic switch (the loads).
template <int N>
KNOT_HD bool hd_step(const ExprInstr& in, HyperDual<N>* reg) {
  HyperDual<N>& r = reg[in.dst];
  const HyperDual<N>& a = reg[in.a];
  const HyperDual<N>& b = reg[in.b];
  switch (in.op) {
    case ExprOp::Add:
      hd_add<N, false>(r, a, b);
      return true;
    case ExprOp::Sub:
      hd_add<N, true>(r, a, b);
      return true;
    case ExprOp::Mul:
      hd_mul(r, a, b);
      return true;
    case ExprOp::Div:
      hd_div(r, a, b);
      return true;
    case ExprOp::AddK:
      hd_shift<N, false>(r, a, a.v + in.k);
      return true;
    case ExprOp::KSub:
      hd_shift<N, true>(r, a, in.k - a.v);
      return true;
    case ExprOp::Neg:
      hd_shift<N, true>(r, a, -a.v);
      return true;
    case ExprOp::MulK:
      hd_scale<N, false>(r, a, in.k);
      return true;
    case ExprOp::DivK:
      hd_scale<N, true>(r, a, in.k);
      return true;
    case ExprOp::KDiv: {
      const double q = in.k / a.v, d1 = -q / a.v;
      hd_chain(r, a, q, d1, -2 * d1 / a.v);
      return true;
    }
    case ExprOp::PowInt:
      if (in.n != 2) return false;
      hd_mul(r, a, a);
      return true;
    case ExprOp::MulAdd:
    case ExprOp::MulSub:
    case ExprOp::MulRSub:
    case ExprOp::MulMul:
    case ExprOp::MulDiv:
    case ExprOp::MulRDiv:
    case ExprOp::MulKAdd:
    case ExprOp::MulKSub:
    case ExprOp::MulKRSub:
    case ExprOp::MulKMul:
    case ExprOp::MulKDiv:
    case ExprOp::MulKRDiv: {
      // The product in a temporary, then the consumer's kernel (c may be the destination).
      HyperDual<N> t;
      if (fused_scaled(in.op))
        hd_scale<N, false>(t, a, in.k);
      else
        hd_mul(t, a, b);
      const HyperDual<N>& c = reg[in.n];
      switch (fused_consumer(in.op)) {
        case 0:
          hd_add<N, false>(r, t, c);
          break;
        case 1:
          hd_add<N, true>(r, t, c);
          break;
        case 2:
          hd_add<N, true>(r, c, t);
          break;
        case 3:
          hd_mul(r, t, c);
          break;
        case 4:
          hd_div(r, t, c);
          break;
        default:
          hd_div(r, c, t);
          break;
      }
      return true;
    }
    case ExprOp::SinCos: {
      // a is neither destination; cos first, as the generic path writes it.
      double s, c;
      sin_cos(a.v, s, c);
      hd_chain(reg[in.b], a, c, -s, -c);
      hd_chain(r, a, s, c, -s);
      return true;
    }
    default:
      return false;
  }
}


// --- first-order duals of W directions in place (the Jacobian sweeps), as above -------------------
// The tangent's lanes are read into locals, combined there and written, in pairs on the host (GCC and
// clang vector types): a Dual's value sits next to its first lane, and GCC's vectorizer, grouping the
// 1 + W doubles of a result together, leaves every lane scalar when the value is computed otherwise
// than the lanes (a product's is). Device code, one lane at a time in each thread anyway, and other
// compilers take single lanes. The per-direction expressions are dual.hpp's (tangent.hpp's
// component loops): bit for bit the same.

template <class S>
inline constexpr int kDualWidth = 0;
template <int W>
inline constexpr int kDualWidth<Dual<double, Tangent<double, W>>> = W;

#if !defined(__CUDACC__) && (defined(__GNUC__) || defined(__clang__))
typedef double ExprLanePair __attribute__((vector_size(16)));
template <int W>
using ExprLane = std::conditional_t<W % 2 == 0, ExprLanePair, double>;
#else
template <int W>
using ExprLane = double;
#endif

template <int W>
struct DualLanes {
  using T = ExprLane<W>;
  static constexpr int kPer = int(sizeof(T) / sizeof(double)), kCount = W / kPer;
  T p[kCount];

  KNOT_HD explicit DualLanes(const double* e) {
    KNOT_EXPR_UNROLL for (int c = 0; c < kCount; ++c) {
      if constexpr (kPer == 1)
        p[c] = e[c];
      else
        __builtin_memcpy(&p[c], e + c * kPer, sizeof(T));
    }
  }
  KNOT_HD DualLanes() {}
  KNOT_HD void store(double* e) const {
    KNOT_EXPR_UNROLL for (int c = 0; c < kCount; ++c) {
      if constexpr (kPer == 1)
        e[c] = p[c];
      else
        __builtin_memcpy(e + c * kPer, &p[c], sizeof(T));
    }
  }
};

// t = a * b (kScaled: a * k) into (tv, td), then r = t op c (kConsumer: fused_consumer's numbering),
// as the unfused pair computes it.
template <int W, bool kScaled, int kConsumer>
KNOT_HD void dual_fused(Dual<double, Tangent<double, W>>& r, const Dual<double, Tangent<double, W>>& a,
                        const Dual<double, Tangent<double, W>>& b, const Dual<double, Tangent<double, W>>& c,
                        double k) {
  using L = DualLanes<W>;
  const double av = a.v, bv = b.v, cv = c.v;
  const L ad(a.d.e), cd(c.d.e);
  L td, rd;
  double tv;
  if constexpr (kScaled) {
    KNOT_EXPR_UNROLL for (int j = 0; j < L::kCount; ++j) td.p[j] = ad.p[j] * k;
    tv = av * k;
  } else {
    const L bd(b.d.e);
    KNOT_EXPR_UNROLL for (int j = 0; j < L::kCount; ++j) td.p[j] = ad.p[j] * bv + av * bd.p[j];
    tv = av * bv;
  }
  double v;
  if constexpr (kConsumer == 0) {
    KNOT_EXPR_UNROLL for (int j = 0; j < L::kCount; ++j) rd.p[j] = td.p[j] + cd.p[j];
    v = tv + cv;
  } else if constexpr (kConsumer == 1) {
    KNOT_EXPR_UNROLL for (int j = 0; j < L::kCount; ++j) rd.p[j] = td.p[j] - cd.p[j];
    v = tv - cv;
  } else if constexpr (kConsumer == 2) {
    KNOT_EXPR_UNROLL for (int j = 0; j < L::kCount; ++j) rd.p[j] = cd.p[j] - td.p[j];
    v = cv - tv;
  } else if constexpr (kConsumer == 3) {
    KNOT_EXPR_UNROLL for (int j = 0; j < L::kCount; ++j) rd.p[j] = td.p[j] * cv + tv * cd.p[j];
    v = tv * cv;
  } else if constexpr (kConsumer == 4) {
    const double q = tv / cv;
    KNOT_EXPR_UNROLL for (int j = 0; j < L::kCount; ++j) rd.p[j] = (td.p[j] - q * cd.p[j]) / cv;
    v = q;
  } else {
    const double q = cv / tv;
    KNOT_EXPR_UNROLL for (int j = 0; j < L::kCount; ++j) rd.p[j] = (cd.p[j] - q * td.p[j]) / tv;
    v = q;
  }
  rd.store(r.d.e);
  r.v = v;
}

// One instruction on Dual registers, as hd_step; false for the ops left to the generic switch (the
// loads among them). Always inlined into run_tape's loop: a call per instruction costs more than the lanes.
template <int W>
KNOT_DUAL_INLINE KNOT_HD bool dual_step(const ExprInstr& in, Dual<double, Tangent<double, W>>* reg) {
  using D = Dual<double, Tangent<double, W>>;
  using L = DualLanes<W>;
  constexpr int C = L::kCount;
  D& r = reg[in.dst];
  const D& a = reg[in.a];
  const D& b = reg[in.b];
  const double av = a.v, bv = b.v, k = in.k;
  L rd;
  double v;
  switch (in.op) {
    case ExprOp::Add: {
      const L ad(a.d.e), bd(b.d.e);
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = ad.p[j] + bd.p[j];
      v = av + bv;
      break;
    }
    case ExprOp::Sub: {
      const L ad(a.d.e), bd(b.d.e);
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = ad.p[j] - bd.p[j];
      v = av - bv;
      break;
    }
    case ExprOp::Mul: {
      const L ad(a.d.e), bd(b.d.e);
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = ad.p[j] * bv + av * bd.p[j];
      v = av * bv;
      break;
    }
    case ExprOp::PowInt: {
      if (in.n != 2) return false;
      const L ad(a.d.e);
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = ad.p[j] * av + av * ad.p[j];
      v = av * av;
      break;
    }
    case ExprOp::Div: {
      const L ad(a.d.e), bd(b.d.e);
      const double q = av / bv;
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = (ad.p[j] - q * bd.p[j]) / bv;
      v = q;
      break;
    }
    case ExprOp::AddK: {
      const L ad(a.d.e);
      rd = ad;
      v = av + k;
      break;
    }
    case ExprOp::KSub: {
      const L ad(a.d.e);
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = -ad.p[j];
      v = k - av;
      break;
    }
    case ExprOp::Neg: {
      const L ad(a.d.e);
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = -ad.p[j];
      v = -av;
      break;
    }
    case ExprOp::MulK: {
      const L ad(a.d.e);
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = ad.p[j] * k;
      v = av * k;
      break;
    }
    case ExprOp::DivK: {
      const L ad(a.d.e);
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = ad.p[j] / k;
      v = av / k;
      break;
    }
    case ExprOp::KDiv: {
      const L ad(a.d.e);
      const double q = k / av, m = -q;
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) rd.p[j] = m * ad.p[j] / av;
      v = q;
      break;
    }
    case ExprOp::SinCos: {
      const L ad(a.d.e);
      double sn, cs;
      sin_cos(av, sn, cs);
      const double ms = -sn;
      L cd;
      KNOT_EXPR_UNROLL for (int j = 0; j < C; ++j) {
        cd.p[j] = ms * ad.p[j];
        rd.p[j] = cs * ad.p[j];
      }
      D& c = reg[in.b];
      cd.store(c.d.e);
      c.v = cs;
      v = sn;
      break;
    }
    case ExprOp::MulAdd:
      dual_fused<W, false, 0>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulSub:
      dual_fused<W, false, 1>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulRSub:
      dual_fused<W, false, 2>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulMul:
      dual_fused<W, false, 3>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulDiv:
      dual_fused<W, false, 4>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulRDiv:
      dual_fused<W, false, 5>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulKAdd:
      dual_fused<W, true, 0>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulKSub:
      dual_fused<W, true, 1>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulKRSub:
      dual_fused<W, true, 2>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulKMul:
      dual_fused<W, true, 3>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulKDiv:
      dual_fused<W, true, 4>(r, a, b, reg[in.n], k);
      return true;
    case ExprOp::MulKRDiv:
      dual_fused<W, true, 5>(r, a, b, reg[in.n], k);
      return true;
    default:
      return false;
  }
  rd.store(r.d.e);
  r.v = v;
  return true;
}

#undef KNOT_EXPR_UNROLL

}  // namespace expr_detail

namespace expr_detail {

// The loads of evaluate(): register = x[n] or u[n].
template <class S>
struct CopyLoad {
  const S* x;
  const S* u;
  KNOT_HD void operator()(const ExprInstr& in, S& r) const { r = (in.op == ExprOp::State ? x : u)[in.n]; }
};

// Runs the tape on reg, each input load through load(in, reg[in.dst]) (a plain functor: device code).
// The tape's fields and the functor are copied into locals: the register stores might alias them,
// and would otherwise make every instruction reload them.
template <class S, class Load>
KNOT_HD void run_tape(const ExprTape& tape, const Load load, S* reg) {
  const ExprInstr* const code = tape.code;
  const int loads = tape.loads, size = tape.size;
  for (int i = 0; i < loads; ++i) load(code[i], reg[code[i].dst]);
  for (int i = loads; i < size; ++i) {
    const ExprInstr& in = code[i];
    if constexpr (kIsHyperDual<S>) {
      if (hd_step(in, reg)) continue;
    } else if constexpr (kDualWidth<S> > 0) {
      if (dual_step(in, reg)) continue;
    }
    // The arithmetic in this switch as well as in apply(): one dispatch for the common ops.
    S& r = reg[in.dst];
    switch (in.op) {
      case ExprOp::Const:
        r = S(in.k);
        break;
      case ExprOp::State:  // loads left in place (dual_step and hd_step decline them)
      case ExprOp::Control:
        load(in, r);
        break;
      case ExprOp::Add:
        r = reg[in.a] + reg[in.b];
        break;
      case ExprOp::Sub:
        r = reg[in.a] - reg[in.b];
        break;
      case ExprOp::Mul:
        r = reg[in.a] * reg[in.b];
        break;
      case ExprOp::Div:
        r = reg[in.a] / reg[in.b];
        break;
      case ExprOp::AddK:
        r = reg[in.a] + in.k;
        break;
      case ExprOp::KSub:
        r = in.k - reg[in.a];
        break;
      case ExprOp::MulK:
        r = reg[in.a] * in.k;
        break;
      case ExprOp::DivK:
        r = reg[in.a] / in.k;
        break;
      case ExprOp::KDiv:
        r = in.k / reg[in.a];
        break;
      case ExprOp::Neg:
        r = -reg[in.a];
        break;
      case ExprOp::MulAdd:
        r = reg[in.a] * reg[in.b] + reg[in.n];
        break;
      case ExprOp::MulSub:
        r = reg[in.a] * reg[in.b] - reg[in.n];
        break;
      case ExprOp::MulRSub:
        r = reg[in.n] - reg[in.a] * reg[in.b];
        break;
      case ExprOp::MulMul:
        r = reg[in.a] * reg[in.b] * reg[in.n];
        break;
      case ExprOp::MulDiv:
        r = reg[in.a] * reg[in.b] / reg[in.n];
        break;
      case ExprOp::MulRDiv:
        r = reg[in.n] / (reg[in.a] * reg[in.b]);
        break;
      case ExprOp::MulKAdd:
        r = reg[in.a] * in.k + reg[in.n];
        break;
      case ExprOp::MulKSub:
        r = reg[in.a] * in.k - reg[in.n];
        break;
      case ExprOp::MulKRSub:
        r = reg[in.n] - reg[in.a] * in.k;
        break;
      case ExprOp::MulKMul:
        r = reg[in.a] * in.k * reg[in.n];
        break;
      case ExprOp::MulKDiv:
        r = reg[in.a] * in.k / reg[in.n];
        break;
      case ExprOp::MulKRDiv:
        r = reg[in.n] / (reg[in.a] * in.k);
        break;
      case ExprOp::SinCos: {
        // Written side by side on a copy of the operand, so that the compiler computes both in one
        // call, as it does for the built-in models' sin and cos of one angle (a reference would be
        // read again after the store of the cosine, which might alias it).
        using std::cos;
        using std::sin;
        const S a = reg[in.a];
        reg[in.b] = cos(a);
        r = sin(a);
        break;
      }
      default:
        r = apply<S>(in, reg[in.a], reg[in.b]);  // not a fused op: those are above
        break;
    }
  }
}

}  // namespace expr_detail

// reg: tape.registers scratch values (kExprMaxRegisters always suffice).
template <class S>
KNOT_HD void evaluate(const ExprTape& tape, const S* x, const S* u, S* reg, S* out) {
  expr_detail::run_tape(tape, expr_detail::CopyLoad<S>{x, u}, reg);
  for (int i = 0; i < tape.n_outputs; ++i) out[i] = reg[tape.outputs[i]];
}

// The register file on the stack: callers that have no scratch of their own.
template <class S>
KNOT_HD void evaluate(const ExprTape& tape, const S* x, const S* u, S* out) {
  S reg[kExprMaxRegisters];
  evaluate(tape, x, u, reg, out);
}

namespace expr_detail {

// The loads of evaluate_jacobian(): w_j's value, seeded with lane l - l0 when j is lane l of this sweep.
template <int W>
struct SeedLoad {
  const double* x;
  const double* u;
  const std::int32_t* input_lane;
  int nx, l0;
  KNOT_HD void operator()(const ExprInstr& in, Dual<double, Tangent<double, W>>& r) const {
    const bool state = in.op == ExprOp::State;
    r = Dual<double, Tangent<double, W>>(state ? x[in.n] : u[in.n]);
    const int k = input_lane[state ? in.n : nx + in.n] - l0;
    if (k >= 0 && k < W) r.d.e[k] = 1.0;
  }
};

}  // namespace expr_detail

// f = the tape's outputs at (x, u) and their Jacobian [jx | ju] (n_outputs rows; jx n_outputs x nx,
// ju n_outputs x nu, column-major), by forward-mode sweeps of W directions over the tape's lanes
// alone (ExprTape): an output that copies an input gets its unit row without a sweep, and the columns
// of inputs no computed output reads are zero without one. ceil(lanes / W) sweeps (one when there
// are no lanes, for f). Each lane's column is bit for bit what a one-direction dual sweep gives; an
// entry outside the structure is an exact zero (a full sweep gives 0 times the partial there, which
// may be -0, or NaN where the partial is infinite). reg: tape.registers duals of scratch.
template <int W>
KNOT_HD void evaluate_jacobian(const ExprTape& tape, int nx, int nu, const double* x, const double* u,
                               Dual<double, Tangent<double, W>>* reg, double* f, double* jx, double* ju) {
  const int no = tape.n_outputs;
  for (int e = 0; e < no * nx; ++e) jx[e] = 0.0;
  for (int e = 0; e < no * nu; ++e) ju[e] = 0.0;
  for (int i = 0; i < no; ++i)
    if (const int j = tape.output_input[i]; j >= 0) (j < nx ? jx + j * no : ju + (j - nx) * no)[i] = 1.0;
  for (int l0 = 0; l0 == 0 || l0 < tape.lanes; l0 += W) {
    expr_detail::run_tape(tape, expr_detail::SeedLoad<W>{x, u, tape.input_lane, nx, l0}, reg);
    for (int e = 0; e < tape.nonzeros; ++e) {
      const std::int32_t* z = tape.nonzero + 3 * e;  // (entry, register, lane)
      const int k = z[2] - l0;
      if (k < 0 || k >= W) continue;
      const double d = reg[z[1]].d.e[k];
      if (z[0] < no * nx)
        jx[z[0]] = d;
      else
        ju[z[0] - no * nx] = d;
    }
    if (l0 == 0)
      for (int i = 0; i < no; ++i) f[i] = reg[tape.outputs[i]].v;
  }
}

// --- compiling -------------------------------------------------------------------------------------

// One expression as written, with where it was written (errors add the offset inside `text`).
struct ExprSource {
  std::string text;
  std::string key_path;  // "model.ode.theta"
  SourceLocation at;     // the value's file position; empty for expressions built in C++
  // Character i of `text` is at column at.column + text_shift + i of line at.line when the text is
  // written on that one line as is (a plain or quoted one-line scalar); -1 when not: errors then
  // point at `at`.
  int text_shift = -1;
};

struct ExprParam {
  std::string name;
  double value = 0;
  std::string key_path;  // "model.params.mass", for errors
  SourceLocation at;
};

struct ExprDef {
  std::string name;
  ExprSource source;
};

// The symbols expressions may read: inputs (states then controls), parameters, definitions. Names
// must be distinct, and none may be a function's name.
struct ExprSymbols {
  std::vector<std::string> states, controls;
  std::vector<ExprParam> params;
  std::vector<ExprDef> defs;
  SourceLocation at;     // where the symbol lists are written (the model mapping), for name errors
  std::string key_path;  // "model"
};

// A compiled tape with its storage; tape() points into it.
struct CompiledExpressions {
  std::vector<ExprInstr> code;
  std::vector<std::uint8_t> outputs;
  int registers = 0;
  int loads = 0;
  std::vector<std::int32_t> output_input, lane_input, input_lane, nonzero;  // ExprTape's Jacobian structure
  ExprTape tape() const {
    return {code.data(),       int(code.size()),      outputs.data(),    int(outputs.size()),
            registers,         loads,                 output_input.data(), lane_input.data(),
            input_lane.data(), int(lane_input.size()), nonzero.data(),     int(nonzero.size() / 3)};
  }
};

// Compiles `outputs` (one tape output each, in order) against `symbols`. Errors throw ProblemError
// at the offending expression's position with the offset inside it: a syntax error, an unknown
// symbol (with the closest known name), a function called with the wrong number of arguments, a
// division by a denominator that is the constant 0, a definition that refers to itself through
// others, a constant that is not finite (log(0)), or more than kExprMaxRegisters live values.
CompiledExpressions compile_expressions(const ExprSymbols& symbols, const std::vector<ExprSource>& outputs);

// The functions expressions may call, with their argument counts (for docs and errors).
struct ExprFunction {
  const char* name;
  int arity;
  const char* meaning;
};
const std::vector<ExprFunction>& expression_functions();

// --- the model -------------------------------------------------------------------------------------

// What the host side of an expression model shows (names, parameters); not read in device code.
struct ExpressionModelInfo {
  std::vector<std::string> state_names, control_names;
  std::vector<ModelParameter> parameters;
  ExprSymbols symbols;  // what residual and constraint expressions on this model may read too
  std::vector<ExprSource> rhs;  // the model's expressions, to compile again with other parameters
};

struct ExpressionDynamics {
  ExprTape tape;  // nx outputs
  int n_states = 0, n_controls = 0, n_positions = 0;
  bool discrete = false;
  int planar[2] = {-1, -1};                   // the states obstacle constraints read as (x, y); -1 when none
  const ExpressionModelInfo* info = nullptr;  // host only

  static constexpr std::string_view kType = "expression";
  static constexpr bool kChainBySweeps = true;  // model_adapter.hpp
  using DualW2 = Dual<double, Tangent<double, 2>>;
  using DualW4 = Dual<double, Tangent<double, 4>>;
  using DualW8 = Dual<double, Tangent<double, 8>>;
  KNOT_HD int nx() const { return n_states; }
  KNOT_HD int nu() const { return n_controls; }
  KNOT_HD int nq() const { return n_positions; }
  bool discrete_time() const { return discrete; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    evaluate(tape, x, u, f);
  }

  // f and its Jacobian fx (nx x nx), fu (nx x nu), column-major, seeding the tape's lanes alone
  // (evaluate_jacobian): the cart-pole's f reads 3 of its 5 inputs, and two of its outputs copy one.
  // ModelAdapter calls it for dynamics_jacobian (and leaves the products with a seed to the integrator).
  KNOT_HD void jacobian(const double* x, const double* u, double* f, double* fx, double* fu) const {
    if (tape.lanes <= 2) {
      DualW2 reg[kExprMaxRegisters];
      evaluate_jacobian<2>(tape, n_states, n_controls, x, u, reg, f, fx, fu);
    } else if (tape.lanes <= 4) {
      DualW4 reg[kExprMaxRegisters];
      evaluate_jacobian<4>(tape, n_states, n_controls, x, u, reg, f, fx, fu);
    } else {
      DualW8 reg[kExprMaxRegisters];
      evaluate_jacobian<8>(tape, n_states, n_controls, x, u, reg, f, fx, fu);
    }
  }

  std::vector<std::string> state_names() const { return info->state_names; }
  std::vector<std::string> control_names() const { return info->control_names; }
  std::vector<ModelParameter> parameters() const { return info->parameters; }
  std::optional<std::array<int, 2>> planar_position() const {
    if (planar[0] < 0) return std::nullopt;
    return std::array<int, 2>{planar[0], planar[1]};
  }
};

// An expression model: `rhs` has one expression per state, in the order of symbols.states (x' for
// an ode, x+ when `discrete`); nq positions lead the state for semi-implicit Euler (0: no split).
struct ExpressionModelSpec {
  ExprSymbols symbols;
  std::vector<ExprSource> rhs;
  bool discrete = false;
  int nq = 0;
  std::optional<std::array<int, 2>> planar_position;  // state indices, for obstacle constraints
};

// Throws ProblemError as compile_expressions does, and for nq outside [0, nx).
std::shared_ptr<const Model> make_expression_model(const ExpressionModelSpec& spec);

// The symbols of an expression model (nullptr for any other model).
const ExprSymbols* expression_symbols(const Model& model);

// An expression model compiled again with some parameters given new values (`values[i]` for
// `names[i]`); nullptr when `model` is not an expression model. An unknown name throws ProblemError
// (model.params.<name>, with the closest name), and so does a non-finite value.
std::shared_ptr<const Model> expression_with_parameters(const Model& model, const std::vector<std::string>& names,
                                                        const std::vector<double>& values);

}  // namespace knot::problems
