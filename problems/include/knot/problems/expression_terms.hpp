// Cost and constraint terms written as expressions (expression.hpp) of a knot's state and control.
//
//   ResidualCost       l = s/2 r' W r, r = r(x, u) (m expressions)   W: m x m, s = dt or 1
//                      gradient s J' W r and Gauss-Newton Hessian s J' W J, J = dr/d(x, u) by dual
//                      sweeps; add_curvature the rest, s sum_i (W r)_i d2r_i, by HyperDual
//   ExpressionConstraint  lower <= g(x, u) <= upper (m expressions), in the rows of the box terms:
//                      per expression g_i - hi when hi is finite, then lo - g_i when lo is; every
//                      bound equal (lower == upper) makes an equality term g - lower = 0
//
// A term's tape reads the inputs it uses through one compact vector (TermExpressions), so the
// duals of an evaluation are as many as those inputs, not nx + nu: at most kTermMaxInputs of them.
// Nothing is allocated per evaluation (the scratch is on the stack).
#pragma once

#include <memory>
#include <vector>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"
#include "knot/problems/cost_weight.hpp"
#include "knot/problems/expression.hpp"

namespace knot::problems {

inline constexpr int kTermMaxInputs = 32;

// m expressions of (x, u) compiled for a term.
class TermExpressions {
 public:
  // Throws ProblemError as compile_expressions does, and when the expressions read more than
  // kTermMaxInputs distinct states and controls.
  TermExpressions(const ExprSymbols& symbols, const std::vector<ExprSource>& outputs);

  int dim() const { return tape_.n_outputs; }
  bool uses_control() const { return uses_control_; }
  // r (dim); with J non-null also J = dr/dw over the used inputs (dim x inputs().size(), column-major).
  void evaluate(const double* x, const double* u, double* r, double* J) const;
  // H (used x used, column-major) = sum_i c_i d2r_i / dw2 over the used inputs; false when more than
  // 16 inputs are used (the caller differences instead).
  bool curvature(const double* x, const double* u, const double* c, double* H) const;
  // Input j of the compact vector: state index (< nx) or nx + control index.
  const std::vector<int>& inputs() const { return inputs_; }
  int nx() const { return nx_; }
  int nu() const { return nu_; }
  // The tape over the compact inputs (its loads read w_j = input j): the device path's copy.
  const ExprTape& tape() const { return tape_; }

 private:
  CompiledExpressions compiled_;
  ExprTape tape_;
  std::vector<int> inputs_;
  int nx_ = 0, nu_ = 0;
  bool uses_control_ = false;
};

class ResidualCost final : public CostTerm {
 public:
  // W: m x m; throws std::invalid_argument when its dimension is not the residual's.
  ResidualCost(TermInfo info, std::shared_ptr<const TermExpressions> r, Weight W);
  std::string_view type() const override { return "residual"; }
  bool uses_control() const override { return r_->uses_control(); }
  double value(const StagePoint& p) const override;
  double accumulate(const StagePoint& p, const CostBlocks& out) const override;
  bool add_curvature(const StagePoint& p, const CostBlocks& out) const override;
  const Weight* weight() const override { return &W_; }
  const TermExpressions& expressions() const { return *r_; }

 private:
  std::shared_ptr<const TermExpressions> r_;
  Weight W_;
};

class ExpressionConstraint final : public ConstraintTerm {
 public:
  ExpressionConstraint(TermInfo info, std::shared_ptr<const TermExpressions> g, std::vector<double> lower,
                       std::vector<double> upper);
  std::string_view type() const override { return "expression"; }
  ConstraintKind kind() const override { return equality_ ? ConstraintKind::Equality : ConstraintKind::Inequality; }
  bool uses_control() const override { return g_->uses_control(); }
  int dim() const override { return int(rows_.size()); }
  void evaluate(const StagePoint& p, double* g) const override;
  void jacobian(const StagePoint& p, double* g, double* gx, double* gu) const override;
  bool add_curvature(const StagePoint& p, const double* mult, double* H, int ldh) const override;

  struct Row {
    int expr;
    double sign, bound;  // row = sign (g_expr - bound)
  };
  const std::vector<Row>& rows() const { return rows_; }
  const TermExpressions& expressions() const { return *g_; }

 private:
  std::shared_ptr<const TermExpressions> g_;
  std::vector<Row> rows_;
  bool equality_ = false;
};

}  // namespace knot::problems
