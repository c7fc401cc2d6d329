// What cost and constraint terms are evaluated at: one knot of the horizon.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "knot/problems/model.hpp"

namespace knot::problems {

// Knots 0..N carry a state; knots 0..N-1 also a control.
//   all      every knot 0..N (a control-dependent term then applies at 0..N-1 only)
//   running  0..N-1
//   terminal N
enum class StageSet { All, Running, Terminal };
std::string_view to_string(StageSet s);
bool applies(StageSet s, int k, int N);

// The point a term is evaluated at. u is null at the terminal knot; u_prev is the control of knot
// k-1 (at k = 0 the previously applied control, or null when none is known).
struct StagePoint {
  int k = 0;
  int N = 0;
  double dt = 0;
  const double* x = nullptr;
  const double* u = nullptr;
  const double* u_prev = nullptr;
  ModelData* data = nullptr;  // scratch for terms that evaluate the model (kinematics)
};

// A reference signal: one row of `dim` values, constant, or one row per knot (row k for knot k;
// knots past the last row use the last row). Stored row-major.
struct Reference {
  int dim = 0;
  std::vector<double> values;

  static Reference constant(std::vector<double> row);
  static Reference per_knot(int dim, std::vector<double> rows_row_major);
  int rows() const { return dim == 0 ? 0 : static_cast<int>(values.size()) / dim; }
  std::span<const double> at(int k) const;
};

// Name, stages and dt scaling, shared by every cost and constraint term.
struct TermInfo {
  std::string name;
  StageSet stages = StageSet::All;
  bool scale_by_dt = false;  // costs only: multiply the term by dt
};

}  // namespace knot::problems
