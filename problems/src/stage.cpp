#include "knot/problems/stage.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "knot/problems/constraint.hpp"
#include "knot/problems/cost.hpp"

namespace knot::problems {

std::string_view to_string(StageSet s) {
  switch (s) {
    case StageSet::All:
      return "all";
    case StageSet::Running:
      return "running";
    case StageSet::Terminal:
      return "terminal";
  }
  return "unknown";
}

bool applies(StageSet s, int k, int N) {
  if (k < 0 || k > N) return false;
  switch (s) {
    case StageSet::All:
      return true;
    case StageSet::Running:
      return k < N;
    case StageSet::Terminal:
      return k == N;
  }
  return false;
}

Reference Reference::constant(std::vector<double> row) {
  if (row.empty()) throw std::invalid_argument("Reference::constant: the row is empty");
  Reference r;
  r.dim = static_cast<int>(row.size());
  r.values = std::move(row);
  return r;
}

Reference Reference::per_knot(int dim, std::vector<double> rows_row_major) {
  if (dim <= 0 || rows_row_major.empty() || rows_row_major.size() % static_cast<std::size_t>(dim) != 0)
    throw std::invalid_argument("Reference::per_knot: expected dim > 0 and a non-empty multiple of dim values, found dim " +
                                std::to_string(dim) + " and " + std::to_string(rows_row_major.size()) + " values");
  Reference r;
  r.dim = dim;
  r.values = std::move(rows_row_major);
  return r;
}

std::span<const double> Reference::at(int k) const {
  const int n = rows();
  if (n == 0) return {};
  const int row = std::clamp(k, 0, n - 1);
  return {values.data() + static_cast<std::size_t>(row) * dim, static_cast<std::size_t>(dim)};
}

bool CostTerm::active(int k, int N) const { return applies(info_.stages, k, N) && !(uses_control() && k >= N); }

void CostTerm::set_reference(Reference) {
  throw std::invalid_argument("cost '" + info_.name + "' (" + std::string(type()) + "): no reference");
}

bool ConstraintTerm::active(int k, int N) const {
  return applies(info_.stages, k, N) && !(uses_control() && k >= N);
}

}  // namespace knot::problems
