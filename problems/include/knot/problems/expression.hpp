// Expressions written in a problem file, compiled to a flat instruction tape.
//
// An expression ("(F + m*l*sin(theta)*omega^2) / denom") is parsed once at load (expression.cpp)
// into a directed acyclic graph with common subexpressions shared and constants folded (parameters
// are constants), then emitted as a tape: a plain array of ExprInstr records over a register file,
// in an order where every operand is computed before it is read. Registers are reused once their
// last reader has run, so a model's whole evaluation fits kExprMaxRegisters live values.
//
// evaluate<S>() runs a tape on any scalar of the model templates (double, Dual for Jacobians,
// HyperDual for Hessians): no virtual calls, no allocation, no standard containers, so the same
// function is callable in device code (KNOT_HD) with the register file in local memory.
//
//   x[nx], u[nu]   the inputs (states and controls)
//   out[n_outputs] out[i] = the value of output i
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
#include <vector>

#include "knot/linalg/config.hpp"
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
};

struct ExprInstr {
  ExprOp op = ExprOp::Const;
  std::uint8_t dst = 0, a = 0, b = 0;  // registers
  std::int32_t n = 0;                  // input index (State, Control) or exponent (PowInt)
  double k = 0;                        // constant (Const, PowConst)
};

// A compiled tape: non-owning, trivially copyable (it is copied into device memory as is).
struct ExprTape {
  const ExprInstr* code = nullptr;
  int size = 0;
  const std::uint8_t* outputs = nullptr;  // the register holding each output after the last instruction
  int n_outputs = 0;
  int registers = 0;  // <= kExprMaxRegisters
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
template <class S>
KNOT_HD S apply(const ExprInstr& in, const S& a, const S& b) {
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
      return S(in.k);  // Const; inputs never reach here
  }
}

}  // namespace expr_detail

// reg: tape.registers scratch values (kExprMaxRegisters always suffice).
template <class S>
KNOT_HD void evaluate(const ExprTape& tape, const S* x, const S* u, S* reg, S* out) {
  for (int i = 0; i < tape.size; ++i) {
    const ExprInstr& in = tape.code[i];
    // The arithmetic in this switch as well as in apply(): one dispatch for the common ops.
    S& r = reg[in.dst];
    switch (in.op) {
      case ExprOp::Const:
        r = S(in.k);
        break;
      case ExprOp::State:
        r = x[in.n];
        break;
      case ExprOp::Control:
        r = u[in.n];
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
      case ExprOp::SinCos: {
        // Written side by side so that the compiler computes both in one call, as it does for the
        // built-in models' sin and cos of one angle. a is neither destination (it is read later).
        using std::cos;
        using std::sin;
        const S& a = reg[in.a];
        reg[in.b] = cos(a);
        r = sin(a);
        break;
      }
      default:
        r = expr_detail::apply<S>(in, reg[in.a], reg[in.b]);
        break;
    }
  }
  for (int i = 0; i < tape.n_outputs; ++i) out[i] = reg[tape.outputs[i]];
}

// The register file on the stack: callers that have no scratch of their own.
template <class S>
KNOT_HD void evaluate(const ExprTape& tape, const S* x, const S* u, S* out) {
  S reg[kExprMaxRegisters];
  evaluate(tape, x, u, reg, out);
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
  ExprTape tape() const { return {code.data(), int(code.size()), outputs.data(), int(outputs.size()), registers}; }
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
};

struct ExpressionDynamics {
  ExprTape tape;  // nx outputs
  int n_states = 0, n_controls = 0, n_positions = 0;
  bool discrete = false;
  int planar[2] = {-1, -1};                   // the states obstacle constraints read as (x, y); -1 when none
  const ExpressionModelInfo* info = nullptr;  // host only

  static constexpr std::string_view kType = "expression";
  KNOT_HD int nx() const { return n_states; }
  KNOT_HD int nu() const { return n_controls; }
  KNOT_HD int nq() const { return n_positions; }
  bool discrete_time() const { return discrete; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    evaluate(tape, x, u, f);
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

}  // namespace knot::problems
