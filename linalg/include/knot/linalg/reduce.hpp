// Group reductions whose result does not depend on the group size.
//
//   dot(x, y) = sum_i x_i y_i        sum_sq(x) = dot(x, x)        norm2(x) = sqrt(sum_sq(x))
//
// The products are written to scratch, then summed by a fixed pairwise tree over the element
// index: at each level with `len` live entries, entry i < len/2 adds entry i + ceil(len/2). The
// tree depends on n alone, so every group size gives bitwise the same sum (and pairwise summation
// has an error bound of O(log n) ulps instead of O(n)).
//
// Operands: x, y contiguous, length n. Scratch: reduce_scratch_size(n) elements, not aliasing x/y.
// Barriers: ceil(log2 n) + 2, the same on every member; ends on a barrier, after which scratch is
// free and every member returns the same value. n <= 0 returns 0 (after the same closing barrier).
#pragma once

#include <cmath>

#include "knot/linalg/group.hpp"

namespace knot::linalg {

KNOT_HD constexpr int reduce_scratch_size(int n) { return n > 0 ? n : 1; }

namespace detail {
// Sums s[0..n) in place by the fixed pairwise tree; ends on a barrier with the sum in s[0].
template <class G, class T>
KNOT_HD void tree_sum(G& g, int n, T* s) {
  for (int len = n; len > 1;) {
    const int half = (len + 1) / 2;
    for (int i = g.rank(); i < len - half; i += g.size()) s[i] += s[i + half];
    len = half;
    g.sync();
  }
}

template <class G, class T>
KNOT_HD T tree_finish(G& g, int n, T* s) {
  tree_sum(g, n, s);
  const T r = n > 0 ? s[0] : T(0);
  g.sync();  // nobody may reuse the scratch before every member has read the sum
  return r;
}
}  // namespace detail

template <class G, class T>
KNOT_HD T dot(G& g, int n, const T* x, const T* y, T* scratch) {
  for (int i = g.rank(); i < n; i += g.size()) scratch[i] = x[i] * y[i];
  g.sync();
  return detail::tree_finish(g, n, scratch);
}

template <class G, class T>
KNOT_HD T sum_sq(G& g, int n, const T* x, T* scratch) {
  return dot(g, n, x, x, scratch);
}

template <class G, class T>
KNOT_HD T norm2(G& g, int n, const T* x, T* scratch) {
  using std::sqrt;
  return sqrt(sum_sq(g, n, x, scratch));
}

}  // namespace knot::linalg
