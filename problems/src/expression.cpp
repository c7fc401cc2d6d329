// The expression language: lexer, recursive-descent parser, a graph with shared subexpressions and
// folded constants, and the tape it is emitted as (expression.hpp).
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/') unary)*
//   unary   := ('-' | '+') unary | power
//   power   := primary ('^' unary)?          right-associative: -x^2 = -(x^2), 2^-1 = 0.5
//   primary := number | name | name '(' expr (',' expr)* ')' | '(' expr ')'
#include "knot/problems/expression.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

#include "knot/problems/model_adapter.hpp"
#include "text.hpp"

namespace knot::problems {
namespace {

// Appends piecewise: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::string.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s.append(p);
  return s;
}

std::string quote(std::string_view s) { return cat({"'", s, "'"}); }

const std::vector<ExprFunction> kFunctions = {
    {"sin", 1, "sine (radians)"},
    {"cos", 1, "cosine"},
    {"tan", 1, "tangent"},
    {"exp", 1, "e^a"},
    {"log", 1, "natural logarithm"},
    {"sqrt", 1, "square root"},
    {"tanh", 1, "hyperbolic tangent"},
    {"abs", 1, "|a| (derivative +1 at 0)"},
    {"atan2", 2, "atan2(y, x), the angle of (x, y)"},
    {"min", 2, "the smaller of a and b"},
    {"max", 2, "the larger of a and b"},
    {"clamp", 3, "clamp(a, lo, hi) = min(max(a, lo), hi)"},
    {"smooth_clamp", 3, "smooth_clamp(a, lo, hi) = m + h tanh((a - m) / h), m = (lo + hi) / 2, h = (hi - lo) / 2"},
};

// Names an expression may read without declaring them.
constexpr double kPi = 3.141592653589793238462643383279502884;
const char* const kConstantName = "pi";

const ExprFunction* find_function(std::string_view name) {
  for (const ExprFunction& f : kFunctions)
    if (name == f.name) return &f;
  return nullptr;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// --- the graph ----------------------------------------------------------------------------------

struct GNode {
  ExprOp op = ExprOp::Const;
  int a = -1, b = -1;
  int n = 0;
  double k = 0;
};

bool unary(ExprOp op) {
  switch (op) {
    case ExprOp::Add:
    case ExprOp::Sub:
    case ExprOp::Mul:
    case ExprOp::Div:
    case ExprOp::Pow:
    case ExprOp::Atan2:
    case ExprOp::Min:
    case ExprOp::Max:
      return false;
    default:
      return true;
  }
}

// Nodes in creation order, which is a topological order (operands are made first). Equal nodes are
// made once (common subexpressions), and a node whose operands are constants is a constant.
class Graph {
 public:
  std::vector<GNode> nodes;

  bool constant(int i, double* v = nullptr) const {
    if (nodes[i].op != ExprOp::Const) return false;
    if (v) *v = nodes[i].k;
    return true;
  }

  // The node, folded when its operands are constants; `folded` tells whether it was.
  int make(GNode g, bool* folded = nullptr) {
    double a = 0, b = 0;
    if (folded) *folded = false;
    bool fold = false;
    if (!folded) folded = &fold;
    if (g.op != ExprOp::Const && g.op != ExprOp::State && g.op != ExprOp::Control && constant(g.a, &a) &&
        (unary(g.op) || constant(g.b, &b))) {
      ExprInstr in;
      in.op = g.op;
      in.n = g.n;
      in.k = g.k;
      g = GNode{ExprOp::Const, -1, -1, 0, expr_detail::apply<double>(in, a, b)};
      if (folded) *folded = true;
    }
    if (!folded || !*folded) g = immediate(g);
    if (unary(g.op)) g.b = -1;
    std::uint64_t bits = 0;
    std::memcpy(&bits, &g.k, sizeof bits);
    const auto key = std::make_tuple(int(g.op), g.a, g.b, g.n, bits);
    const auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    nodes.push_back(g);
    index_.emplace(key, int(nodes.size()) - 1);
    return int(nodes.size()) - 1;
  }

 private:
  // A constant operand of + - * / as the op's immediate k.
  GNode immediate(GNode g) const {
    double k = 0;
    const bool ka =
        (g.op == ExprOp::Add || g.op == ExprOp::Sub || g.op == ExprOp::Mul || g.op == ExprOp::Div) && constant(g.a, &k);
    if (ka) {
      switch (g.op) {
        case ExprOp::Add:
          return {ExprOp::AddK, g.b, -1, 0, k};
        case ExprOp::Sub:
          return {ExprOp::KSub, g.b, -1, 0, k};
        case ExprOp::Mul:
          return {ExprOp::MulK, g.b, -1, 0, k};
        default:
          return {ExprOp::KDiv, g.b, -1, 0, k};
      }
    }
    if ((g.op == ExprOp::Add || g.op == ExprOp::Sub || g.op == ExprOp::Mul || g.op == ExprOp::Div) &&
        constant(g.b, &k)) {
      switch (g.op) {
        case ExprOp::Add:
          return {ExprOp::AddK, g.a, -1, 0, k};
        case ExprOp::Sub:
          return {ExprOp::AddK, g.a, -1, 0, -k};
        case ExprOp::Mul:
          return {ExprOp::MulK, g.a, -1, 0, k};
        default:
          return {ExprOp::DivK, g.a, -1, 0, k};
      }
    }
    return g;
  }

  std::map<std::tuple<int, int, int, int, std::uint64_t>, int> index_;
};

// --- compiling ------------------------------------------------------------------------------------

class Compiler;

// One expression's tokens and recursive descent.
class Parser {
 public:
  Parser(Compiler& c, const ExprSource& src) : c_(c), src_(src) {}
  int parse();  // the expression's node

 private:
  enum class Kind { Number, Name, Op, End };
  struct Token {
    Kind kind = Kind::End;
    std::size_t pos = 0, len = 0;  // offset into the text
    char op = 0;
    double value = 0;
    std::string_view text;
  };

  void next();
  int expr();
  int term();
  int unary_expr();
  int power();
  int primary();
  int call(const Token& name);
  void expect_op(char op, const char* what);

  [[noreturn]] void fail_at(std::size_t pos, std::size_t len, std::string expected, std::string hint = {}) const;

  Compiler& c_;
  const ExprSource& src_;
  std::size_t pos_ = 0;
  Token tok_;
};

class Compiler {
 public:
  explicit Compiler(const ExprSymbols& s) : sym_(s) { check_names(); }

  Graph g;

  // The node a name stands for, or -1 when it names nothing.
  int symbol(std::string_view name, const ExprSource& from, std::size_t pos, std::size_t len) {
    for (std::size_t i = 0; i < sym_.states.size(); ++i)
      if (name == sym_.states[i]) return g.make({ExprOp::State, -1, -1, int(i), 0});
    for (std::size_t i = 0; i < sym_.controls.size(); ++i)
      if (name == sym_.controls[i]) return g.make({ExprOp::Control, -1, -1, int(i), 0});
    for (const ExprParam& p : sym_.params)
      if (name == p.name) return g.make({ExprOp::Const, -1, -1, 0, p.value});
    if (name == kConstantName) return g.make({ExprOp::Const, -1, -1, 0, kPi});
    for (std::size_t i = 0; i < sym_.defs.size(); ++i)
      if (name == sym_.defs[i].name) return definition(i, from, pos, len);
    return -1;
  }

  std::vector<std::string> known_names() const {
    std::vector<std::string> out = sym_.states;
    out.insert(out.end(), sym_.controls.begin(), sym_.controls.end());
    for (const ExprParam& p : sym_.params) out.push_back(p.name);
    for (const ExprDef& d : sym_.defs) out.push_back(d.name);
    out.push_back(kConstantName);
    return out;
  }

  [[noreturn]] static void fail(const ExprSource& src, std::size_t pos, std::size_t len, std::string expected,
                                std::string hint = {}) {
    const std::string token = len == 0 ? std::string("the end") : quote(std::string_view(src.text).substr(pos, len));
    std::string found = cat({token, " at character ", std::to_string(pos + 1), " of ", quote(src.text)});
    SourceLocation at = src.at;
    if (src.text_shift >= 0 && at.line > 0) at.column += src.text_shift + int(pos);
    throw ProblemError(std::move(at), src.key_path, std::move(expected), std::move(found), std::move(hint));
  }

 private:
  enum class State { Unvisited, Active, Done };

  int definition(std::size_t i, const ExprSource& from, std::size_t pos, std::size_t len) {
    if (state_.empty()) {
      state_.assign(sym_.defs.size(), State::Unvisited);
      node_.assign(sym_.defs.size(), -1);
    }
    if (state_[i] == State::Done) return node_[i];
    if (state_[i] == State::Active) {
      std::string cycle;
      const auto start = std::find(active_.begin(), active_.end(), i);
      for (auto it = start; it != active_.end(); ++it) cycle.append(sym_.defs[*it].name).append(" -> ");
      cycle.append(sym_.defs[i].name);
      fail(from, pos, len, "definitions that do not refer to themselves", cat({"the cycle ", cycle}));
    }
    state_[i] = State::Active;
    active_.push_back(i);
    node_[i] = Parser(*this, sym_.defs[i].source).parse();
    active_.pop_back();
    state_[i] = State::Done;
    return node_[i];
  }

  // Every name an identifier, distinct from the others and from the functions and constants.
  void check_names() const {
    std::vector<std::pair<std::string_view, const char*>> all;
    for (const std::string& s : sym_.states) all.emplace_back(s, "states");
    for (const std::string& s : sym_.controls) all.emplace_back(s, "controls");
    for (const ExprParam& p : sym_.params) all.emplace_back(p.name, "params");
    for (const ExprDef& d : sym_.defs) all.emplace_back(d.name, "defs");
    for (std::size_t i = 0; i < all.size(); ++i) {
      const auto [name, where] = all[i];
      const std::string path = sym_.key_path.empty() ? std::string(where) : cat({sym_.key_path, ".", where});
      if (!is_identifier(name))
        throw ProblemError(sym_.at, path, "names of letters, digits and _ that do not start with a digit", quote(name));
      if (find_function(name) || name == kConstantName)
        throw ProblemError(sym_.at, path, "names that are not a function or constant of the expression language",
                           quote(name));
      for (std::size_t j = 0; j < i; ++j)
        if (all[j].first == name)
          throw ProblemError(sym_.at, path, "names used once across states, controls, params and defs",
                             cat({quote(name), " in both ", all[j].second, " and ", where}));
    }
  }

  const ExprSymbols& sym_;
  std::vector<State> state_;
  std::vector<int> node_;
  std::vector<std::size_t> active_;
};

void Parser::fail_at(std::size_t pos, std::size_t len, std::string expected, std::string hint) const {
  Compiler::fail(src_, pos, len, std::move(expected), std::move(hint));
}

void Parser::next() {
  const std::string& s = src_.text;
  while (pos_ < s.size() && std::isspace(static_cast<unsigned char>(s[pos_]))) ++pos_;
  tok_ = Token{};
  tok_.pos = pos_;
  if (pos_ == s.size()) return;
  const char c = s[pos_];
  const auto digit = [&](std::size_t i) { return i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); };
  if (digit(pos_) || (c == '.' && digit(pos_ + 1))) {
    std::size_t end = pos_;
    while (digit(end)) ++end;
    if (end < s.size() && s[end] == '.') {
      ++end;
      while (digit(end)) ++end;
    }
    if (end < s.size() && (s[end] == 'e' || s[end] == 'E')) {
      std::size_t e = end + 1;
      if (e < s.size() && (s[e] == '+' || s[e] == '-')) ++e;
      if (!digit(e)) fail_at(pos_, e - pos_, "a number with digits after its exponent");
      while (digit(e)) ++e;
      end = e;
    }
    double v = 0;
    const auto [ptr, ec] = std::from_chars(s.data() + pos_, s.data() + end, v);
    if (ec != std::errc() || ptr != s.data() + end || !std::isfinite(v)) fail_at(pos_, end - pos_, "a finite number");
    tok_ = Token{Kind::Number, pos_, end - pos_, 0, v, std::string_view(s).substr(pos_, end - pos_)};
    pos_ = end;
    return;
  }
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    std::size_t end = pos_;
    while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_')) ++end;
    tok_ = Token{Kind::Name, pos_, end - pos_, 0, 0, std::string_view(s).substr(pos_, end - pos_)};
    pos_ = end;
    return;
  }
  if (std::strchr("+-*/^(),", c) != nullptr) {
    tok_ = Token{Kind::Op, pos_, 1, c, 0, std::string_view(s).substr(pos_, 1)};
    ++pos_;
    return;
  }
  // One UTF-8 character, so the message shows it whole.
  std::size_t len = 1;
  while (pos_ + len < s.size() && (static_cast<unsigned char>(s[pos_ + len]) & 0xC0) == 0x80) ++len;
  fail_at(pos_, len, "a number, a name, an operator (+ - * / ^) or a parenthesis");
}

int Parser::parse() {
  next();
  if (tok_.kind == Kind::End) fail_at(tok_.pos, 0, "an expression");
  const int n = expr();
  if (tok_.kind != Kind::End) fail_at(tok_.pos, tok_.len, "an operator or the end of the expression");
  return n;
}

int Parser::expr() {
  int left = term();
  while (tok_.kind == Kind::Op && (tok_.op == '+' || tok_.op == '-')) {
    const ExprOp op = tok_.op == '+' ? ExprOp::Add : ExprOp::Sub;
    const std::size_t at = tok_.pos;
    next();
    bool folded = false;
    left = c_.g.make({op, left, term()}, &folded);
    double v = 0;
    if (folded && c_.g.constant(left, &v) && !std::isfinite(v))
      fail_at(at, 1, "constants whose sum and difference are finite");
  }
  return left;
}

int Parser::term() {
  int left = unary_expr();
  while (tok_.kind == Kind::Op && (tok_.op == '*' || tok_.op == '/')) {
    const bool div = tok_.op == '/';
    next();
    const std::size_t start = tok_.pos;
    const int right = unary_expr();
    double v = 1;
    if (div && c_.g.constant(right, &v) && v == 0)
      fail_at(start, tok_.pos - start, "a denominator that is not the constant 0");
    bool folded = false;
    left = c_.g.make({div ? ExprOp::Div : ExprOp::Mul, left, right}, &folded);
    if (folded && !c_.g.constant(left, &v)) folded = false;
    if (folded && !std::isfinite(v))
      fail_at(start, tok_.pos - start, "constants whose product and quotient are finite");
  }
  return left;
}

int Parser::unary_expr() {
  if (tok_.kind == Kind::Op && (tok_.op == '-' || tok_.op == '+')) {
    const bool neg = tok_.op == '-';
    next();
    const int a = unary_expr();
    return neg ? c_.g.make({ExprOp::Neg, a}) : a;
  }
  return power();
}

int Parser::power() {
  const int base = primary();
  if (!(tok_.kind == Kind::Op && tok_.op == '^')) return base;
  next();
  const std::size_t start = tok_.pos;
  const int e = unary_expr();
  double p = 0;
  GNode g{ExprOp::Pow, base, e};
  if (c_.g.constant(e, &p)) {
    if (p == std::floor(p) && std::abs(p) <= 64) {
      if (p == 0) return c_.g.make({ExprOp::Const, -1, -1, 0, 1.0});
      if (p == 1) return base;
      g = GNode{ExprOp::PowInt, base, -1, int(p), 0};
    } else {
      g = GNode{ExprOp::PowConst, base, -1, 0, p};
    }
  }
  bool folded = false;
  const int r = c_.g.make(g, &folded);
  double v = 0;
  if (folded && c_.g.constant(r, &v) && !std::isfinite(v))
    fail_at(start, tok_.pos - start, "a power of constants that is finite");
  return r;
}

void Parser::expect_op(char op, const char* what) {
  if (!(tok_.kind == Kind::Op && tok_.op == op)) fail_at(tok_.pos, tok_.len, what);
  next();
}

int Parser::primary() {
  const Token t = tok_;
  if (t.kind == Kind::Number) {
    next();
    return c_.g.make({ExprOp::Const, -1, -1, 0, t.value});
  }
  if (t.kind == Kind::Op && t.op == '(') {
    next();
    const int inner = expr();
    expect_op(')', "')' closing the parenthesis");
    return inner;
  }
  if (t.kind == Kind::Name) {
    next();
    if (tok_.kind == Kind::Op && tok_.op == '(') return call(t);
    if (find_function(t.text))
      fail_at(t.pos, t.len, cat({"a call ", t.text, "(...)"}), cat({quote(t.text), " is a function"}));
    const int n = c_.symbol(t.text, src_, t.pos, t.len);
    if (n >= 0) return n;
    std::vector<std::string> names = c_.known_names();
    const std::string near = text::closest(t.text, names);
    fail_at(t.pos, t.len, "a state, control, parameter or definition",
            near.empty() ? std::string() : cat({"did you mean '", near, "'?"}));
  }
  fail_at(t.pos, t.len, "a number, a name or '('");
}

int Parser::call(const Token& name) {
  const ExprFunction* f = find_function(name.text);
  if (!f) {
    std::vector<std::string> names;
    for (const ExprFunction& fn : kFunctions) names.emplace_back(fn.name);
    const std::string near = text::closest(name.text, names);
    fail_at(
        name.pos, name.len,
        "a function (" +
            [&] {
              std::string list;
              for (const ExprFunction& fn : kFunctions) list.append(list.empty() ? "" : ", ").append(fn.name);
              return list;
            }() +
            ")",
        near.empty() ? std::string() : cat({"did you mean '", near, "'?"}));
  }
  next();  // '('
  std::vector<int> args;
  std::vector<std::size_t> starts;
  if (!(tok_.kind == Kind::Op && tok_.op == ')')) {
    while (true) {
      starts.push_back(tok_.pos);
      args.push_back(expr());
      if (tok_.kind == Kind::Op && tok_.op == ',') {
        next();
        continue;
      }
      break;
    }
  }
  const std::size_t close = tok_.pos;
  expect_op(')', "',' or ')' in the argument list");
  if (int(args.size()) != f->arity) {
    const std::string count = std::to_string(f->arity);
    fail_at(name.pos, close + 1 - name.pos,
            cat({name.text, " with ", count, f->arity == 1 ? " argument" : " arguments"}),
            cat({"found ", std::to_string(args.size()), ": ", f->meaning}));
  }
  const std::string_view fn = f->name;
  Graph& g = c_.g;
  bool folded = false;
  int r = -1;
  if (fn == "clamp") {
    r = g.make({ExprOp::Min, g.make({ExprOp::Max, args[0], args[1]}), args[2]}, &folded);
  } else if (fn == "smooth_clamp") {
    double lo = 0, hi = 0;
    if (g.constant(args[1], &lo) && g.constant(args[2], &hi) && !(hi > lo))
      fail_at(starts[1], close - starts[1], "bounds lo < hi for smooth_clamp");
    const int two = g.make({ExprOp::Const, -1, -1, 0, 2.0});
    const int m = g.make({ExprOp::Div, g.make({ExprOp::Add, args[1], args[2]}), two});
    const int h = g.make({ExprOp::Div, g.make({ExprOp::Sub, args[2], args[1]}), two});
    const int t = g.make({ExprOp::Tanh, g.make({ExprOp::Div, g.make({ExprOp::Sub, args[0], m}), h})});
    r = g.make({ExprOp::Add, m, g.make({ExprOp::Mul, h, t})}, &folded);
  } else {
    static const std::pair<const char*, ExprOp> ops[] = {
        {"sin", ExprOp::Sin},     {"cos", ExprOp::Cos},   {"tan", ExprOp::Tan},   {"exp", ExprOp::Exp},
        {"log", ExprOp::Log},     {"sqrt", ExprOp::Sqrt}, {"tanh", ExprOp::Tanh}, {"abs", ExprOp::Abs},
        {"atan2", ExprOp::Atan2}, {"min", ExprOp::Min},   {"max", ExprOp::Max},
    };
    for (const auto& [n, op] : ops)
      if (fn == n) r = g.make({op, args[0], args.size() > 1 ? args[1] : -1}, &folded);
  }
  double v = 0;
  if (folded && g.constant(r, &v) && !std::isfinite(v))
    fail_at(name.pos, close + 1 - name.pos, "a call on constants whose value is finite");
  return r;
}

}  // namespace

const std::vector<ExprFunction>& expression_functions() { return kFunctions; }

CompiledExpressions compile_expressions(const ExprSymbols& symbols, const std::vector<ExprSource>& outputs) {
  Compiler c(symbols);
  std::vector<int> roots;
  for (const ExprSource& src : outputs) roots.push_back(Parser(c, src).parse());
  const std::vector<GNode>& nodes = c.g.nodes;
  const int n = int(nodes.size());

  // Only what an output reads is emitted.
  std::vector<char> live(n, 0);
  for (int r : roots) live[r] = 1;
  for (int i = n - 1; i >= 0; --i)
    if (live[i]) {
      if (nodes[i].a >= 0) live[nodes[i].a] = 1;
      if (nodes[i].b >= 0) live[nodes[i].b] = 1;
    }

  // A product (a * b, or a * k) that one +, -, * or / reads, and nothing else (no output either), is
  // fused into that reader: fused_into[p] is the reader, whose instruction computes the product too.
  // One level: a reader that fused a product is not fused into its own reader.
  constexpr int kForever = 1 << 30;
  std::vector<int> uses(n, 0), fused_into(n, -1), fused_side(n, -1);
  for (int i = 0; i < n; ++i)
    if (live[i]) {
      if (nodes[i].a >= 0) ++uses[nodes[i].a];
      if (nodes[i].b >= 0) ++uses[nodes[i].b];
    }
  for (int r : roots) uses[r] = kForever;
  for (int i = 0; i < n; ++i) {
    const ExprOp op = nodes[i].op;
    if (!live[i] || fused_into[i] >= 0 ||
        !(op == ExprOp::Add || op == ExprOp::Sub || op == ExprOp::Mul || op == ExprOp::Div))
      continue;
    for (int side = 0; side < 2 && fused_side[i] < 0; ++side) {
      const int p = side == 0 ? nodes[i].a : nodes[i].b;
      if ((nodes[p].op == ExprOp::Mul || nodes[p].op == ExprOp::MulK) && uses[p] == 1 && fused_side[p] < 0) {
        fused_into[p] = i;
        fused_side[i] = side;
      }
    }
  }
  // What each emitted node reads: a fused product's operands instead of the product.
  const auto reads = [&](int i) {
    std::vector<int> r;
    for (int operand : {nodes[i].a, nodes[i].b}) {
      if (operand < 0) continue;
      if (fused_into[operand] == i) {
        r.push_back(nodes[operand].a);
        if (nodes[operand].op == ExprOp::Mul) r.push_back(nodes[operand].b);
      } else {
        r.push_back(operand);
      }
    }
    return r;
  };
  // A register is free after its last reader.
  std::vector<int> last(n, -1);
  for (int i = 0; i < n; ++i)
    if (live[i] && fused_into[i] < 0)
      for (int operand : reads(i)) last[operand] = i;
  for (int r : roots) last[r] = kForever;

  // A live sin and cos of one operand are one SinCos at the first of the two; the other is then
  // already computed when its turn comes (partner[i]: that node, -1 when none).
  std::vector<int> partner(n, -1);
  {
    std::map<int, int> sin_of, cos_of;
    for (int i = 0; i < n; ++i)
      if (live[i] && nodes[i].op == ExprOp::Sin)
        sin_of[nodes[i].a] = i;
      else if (live[i] && nodes[i].op == ExprOp::Cos)
        cos_of[nodes[i].a] = i;
    for (const auto& [a, si] : sin_of)
      if (const auto it = cos_of.find(a); it != cos_of.end()) {
        partner[si] = it->second;
        partner[it->second] = si;
      }
  }

  // The tape, with the input loads first when `hoist` (the evaluator copies them in a loop, with no
  // dispatch; their registers are then held from the start); false when that needs more than
  // kExprMaxRegisters registers.
  const auto emit = [&](bool hoist, CompiledExpressions& out) {
    out = CompiledExpressions{};
    std::vector<int> reg(n, -1);
    std::vector<char> busy;
    bool fits = true;
    const auto take = [&] {
      int r = 0;
      while (r < int(busy.size()) && busy[r]) ++r;
      if (r == int(busy.size())) busy.push_back(0);
      busy[r] = 1;
      fits = fits && r < kExprMaxRegisters;
      return r;
    };
    const auto is_load = [&](int i) { return nodes[i].op == ExprOp::State || nodes[i].op == ExprOp::Control; };
    if (hoist)
      for (int i = 0; i < n; ++i)
        if (live[i] && is_load(i)) {
          reg[i] = take();
          ExprInstr in;
          in.op = nodes[i].op;
          in.dst = std::uint8_t(reg[i]);
          in.n = nodes[i].n;
          out.code.push_back(in);
          ++out.loads;
        }
    for (int i = 0; i < n && fits; ++i) {
      if (!live[i] || fused_into[i] >= 0 || (hoist && is_load(i))) continue;
      const GNode& g = nodes[i];
      // Operands read for the last time free their registers before the result takes one: the
      // evaluator reads every operand before it writes. (The operand of a SinCos is read again by
      // its later partner, so it is not freed at the first.)
      for (int operand : reads(i))
        if (last[operand] == i) busy[reg[operand]] = 0;
      if (reg[i] >= 0) continue;  // computed with its partner
      reg[i] = take();
      ExprInstr in;
      in.op = g.op;
      in.dst = std::uint8_t(reg[i]);
      in.a = std::uint8_t(g.a >= 0 ? reg[g.a] : 0);
      in.b = std::uint8_t(g.b >= 0 ? reg[g.b] : 0);
      in.n = g.n;
      in.k = g.k;
      if (const int side = fused_side[i]; side >= 0) {
        // t = the product, c = the other operand: t + c, t - c or c - t, t * c, t / c or c / t.
        const GNode& p = nodes[side == 0 ? g.a : g.b];
        const int c = side == 0 ? g.b : g.a;
        int consumer = 0;
        switch (g.op) {
          case ExprOp::Add:
            consumer = 0;
            break;
          case ExprOp::Sub:
            consumer = side == 0 ? 1 : 2;
            break;
          case ExprOp::Mul:
            consumer = 3;
            break;
          default:
            consumer = side == 0 ? 4 : 5;
            break;
        }
        const ExprOp base = p.op == ExprOp::MulK ? ExprOp::MulKAdd : ExprOp::MulAdd;
        in.op = ExprOp(int(base) + consumer);
        in.a = std::uint8_t(reg[p.a]);
        in.b = std::uint8_t(p.op == ExprOp::Mul ? reg[p.b] : 0);
        in.k = p.k;
        in.n = reg[c];
      }
      if (const int p = partner[i]; p >= 0) {
        reg[p] = take();
        const int s = g.op == ExprOp::Sin ? i : p, c = g.op == ExprOp::Sin ? p : i;
        in.op = ExprOp::SinCos;
        in.dst = std::uint8_t(reg[s]);
        in.b = std::uint8_t(reg[c]);
      }
      out.code.push_back(in);
    }
    for (int r : roots) out.outputs.push_back(std::uint8_t(reg[r]));
    out.registers = int(busy.size());
    return fits && out.registers <= kExprMaxRegisters;
  };
  CompiledExpressions out;
  if (!emit(true, out) && !emit(false, out))
    throw ProblemError(
        symbols.at, symbols.key_path,
        cat({"expressions that need at most ", std::to_string(kExprMaxRegisters), " intermediate values at once"}),
        "more (split the model into fewer, shorter expressions or share definitions)");

  // The Jacobian's structure: the inputs each node depends on (w_j: x_j, then u_(j-nx) at nx + j),
  // and an output that is an input itself.
  const int nx = int(symbols.states.size()), n_in = nx + int(symbols.controls.size());
  std::vector<std::vector<char>> deps(n, std::vector<char>(n_in, 0));
  for (int i = 0; i < n; ++i) {
    if (!live[i]) continue;
    if (nodes[i].op == ExprOp::State) deps[i][nodes[i].n] = 1;
    if (nodes[i].op == ExprOp::Control) deps[i][nx + nodes[i].n] = 1;
    for (int operand : {nodes[i].a, nodes[i].b})
      if (operand >= 0)
        for (int j = 0; j < n_in; ++j) deps[i][j] = char(deps[i][j] | deps[operand][j]);
  }
  std::vector<char> used(n_in, 0);
  for (int r : roots) {
    const ExprOp op = nodes[r].op;
    const int copy = op == ExprOp::State ? nodes[r].n : op == ExprOp::Control ? nx + nodes[r].n : -1;
    out.output_input.push_back(copy);
    if (copy < 0)
      for (int j = 0; j < n_in; ++j) used[j] = char(used[j] | deps[r][j]);
  }
  out.input_lane.assign(n_in, -1);
  for (int j = 0; j < n_in; ++j)
    if (used[j]) {
      out.input_lane[j] = int(out.lane_input.size());
      out.lane_input.push_back(j);
    }
  for (int i = 0; i < int(roots.size()); ++i)
    if (out.output_input[i] < 0)
      for (int l = 0; l < int(out.lane_input.size()); ++l)
        if (const int j = out.lane_input[l]; deps[roots[i]][j])
          out.nonzero.insert(out.nonzero.end(), {i + j * int(roots.size()), int(out.outputs[i]), l});
  return out;
}

namespace {

struct ExpressionStorage {
  CompiledExpressions compiled;
  ExpressionModelInfo info;
};

}  // namespace

std::shared_ptr<const Model> make_expression_model(const ExpressionModelSpec& spec) {
  const ExprSymbols& s = spec.symbols;
  const int nx = int(s.states.size());
  const std::string path = s.key_path.empty() ? std::string("model") : s.key_path;
  if (nx < 1) throw ProblemError(s.at, path + ".states", "a list of at least one state name", "none");
  if (spec.rhs.size() != s.states.size())
    throw ProblemError(s.at, path, cat({"one expression per state (", std::to_string(nx), ")"}),
                       std::to_string(spec.rhs.size()));
  if (spec.nq < 0 || spec.nq >= nx)
    throw ProblemError(s.at, path + ".nq",
                       cat({"an integer in [0, ", std::to_string(nx - 1), "] (positions lead the state)"}),
                       std::to_string(spec.nq));
  auto storage = std::make_shared<ExpressionStorage>();
  storage->compiled = compile_expressions(s, spec.rhs);
  storage->info.state_names = s.states;
  storage->info.control_names = s.controls;
  for (const ExprParam& p : s.params) storage->info.parameters.emplace_back(p.name, std::vector<double>{p.value});
  storage->info.symbols = s;
  storage->info.rhs = spec.rhs;
  ExpressionDynamics m;
  m.tape = storage->compiled.tape();
  m.n_states = nx;
  m.n_controls = int(s.controls.size());
  m.n_positions = spec.nq;
  m.discrete = spec.discrete;
  if (const auto& pp = spec.planar_position) {
    for (int i : *pp)
      if (i < 0 || i >= nx) throw ProblemError(s.at, path + ".planar_position", "two state indices", std::to_string(i));
    m.planar[0] = (*pp)[0];
    m.planar[1] = (*pp)[1];
  }
  m.info = &storage->info;
  return std::make_shared<ModelAdapter<ExpressionDynamics>>(m, storage);
}

const ExprSymbols* expression_symbols(const Model& model) {
  const auto* m = dynamic_cast<const ModelAdapter<ExpressionDynamics>*>(&model);
  return m ? &m->model().info->symbols : nullptr;
}

std::shared_ptr<const Model> expression_with_parameters(const Model& model, const std::vector<std::string>& names,
                                                        const std::vector<double>& values) {
  const auto* a = dynamic_cast<const ModelAdapter<ExpressionDynamics>*>(&model);
  if (!a) return nullptr;
  const ExpressionDynamics& m = a->model();
  ExpressionModelSpec spec;
  spec.symbols = m.info->symbols;
  spec.rhs = m.info->rhs;
  spec.discrete = m.discrete;
  spec.nq = m.n_positions;
  if (m.planar[0] >= 0) spec.planar_position = std::array<int, 2>{m.planar[0], m.planar[1]};
  const std::string path = (spec.symbols.key_path.empty() ? std::string("model") : spec.symbols.key_path) + ".params";
  for (std::size_t i = 0; i < names.size(); ++i) {
    ExprParam* hit = nullptr;
    std::vector<std::string> known;
    for (ExprParam& q : spec.symbols.params) {
      known.push_back(q.name);
      if (q.name == names[i]) hit = &q;
    }
    if (!hit) {
      const std::string near = text::closest(names[i], known);
      throw ProblemError(SourceLocation{}, path + "." + names[i], "a parameter of the expression model",
                         "'" + names[i] + "'", near.empty() ? "" : "did you mean '" + near + "'?");
    }
    if (!std::isfinite(values[i]))
      throw ProblemError(SourceLocation{}, path + "." + names[i], "a finite number", text::format_number(values[i]));
    hit->value = values[i];
  }
  return make_expression_model(spec);
}

}  // namespace knot::problems
