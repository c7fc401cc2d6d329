// Preconditioned conjugate gradient on an SPD block-tridiagonal system  S x = gamma.
//
// S and the preconditioner P^-1 are nb strips of bs x 3bs (bdmv.hpp; P^-1 from precond.hpp, or
// nullptr for none). gamma and x are padded vectors, (nb + 2)*bs; x holds the warm start on entry
// and the iterate on return (its pads must be zero: bdmv reads them).
//
//   r = gamma - S x,  z = P^-1 r,  p = z,  eta = r'z
//   repeat:  alpha = eta / p'Sp,  x += alpha p,  r -= alpha Sp,  z = P^-1 r,
//            eta+ = r'z,  stop?,  p = z + (eta+ / eta) p
//
// Stopping rules on eta = r'z (PcgOptions::stop):
//   Relative (GLASS):   |eta| < abs_tol + rel_tol |eta_0|    (eta_0 from the warm start's residual)
//   Absolute (MPCGPU):  |eta| < abs_tol
// eta == 0 (the warm start solves the system exactly) stops at once under either rule. A
// non-finite eta or p'Sp (NaN in the data) or a non-positive p'Sp (S not SPD) ends the iteration
// as not converged; the loop is bounded by max_iters in every case. The iteration count depends on
// the data, but every member takes the same branch (all read the same reduced scalars).
//
// nb == 0 or bs == 0 is an empty system (converged, 0 iterations); a negative dimension or a null
// S, gamma, x or scratch returns not converged without touching anything.
// Early stop: stop(it) is called before iteration it (1, 2, ...); when it returns true the loop
// ends with x the iterate of it - 1 iterations, converged false and stopped true. The caller decides
// what it checks (a host clock, a device flag); it must return the same value on every member,
// since all members take the branch. The default PcgNoStop compiles away, so a call without a
// predicate runs the very same arithmetic.
// Scratch: pcg_scratch_size(nb, bs) elements (r, z, p, Sp and the reduction buffer).
// Reductions use the fixed tree of reduce.hpp: results are bitwise identical for every group size.
// Ends on a barrier; every member returns the same result.
#pragma once

#include <cmath>
#include <type_traits>

#include "knot/linalg/bdmv.hpp"
#include "knot/linalg/reduce.hpp"

namespace knot::linalg {

enum class PcgStop { Relative, Absolute };

template <class T>
struct PcgOptions {
  int max_iters = 100;
  T rel_tol = T(1e-12);
  T abs_tol = T(0);
  PcgStop stop = PcgStop::Relative;
};

struct PcgResult {
  int iterations = 0;
  bool converged = false;
  bool stopped = false;  // the stop predicate ended the loop
};

// The default stop predicate: never stops.
struct PcgNoStop {
  KNOT_HD constexpr bool operator()(int /*iteration*/) const { return false; }
};

KNOT_HD constexpr long pcg_scratch_size(int nb, int bs) {
  return nb > 0 && bs > 0 ? 4 * padded_size(nb, bs) + reduce_scratch_size(nb * bs) : 1;
}

template <int BS = kDynamic, class G, class T, class Stop = PcgNoStop>
KNOT_HD PcgResult pcg(G& g, int nb, int bs_rt, const T* S, const std::type_identity_t<T>* Pinv, const T* gamma, T* x,
                      T* scratch, const PcgOptions<T>& opt, Stop stop = {}) {
  using std::abs;
  using std::isfinite;
  const int bs = extent<BS>(bs_rt);
  PcgResult res;
  if (nb <= 0 || bs <= 0 || S == nullptr || gamma == nullptr || x == nullptr || scratch == nullptr) {
    // An empty system is solved; a negative dimension or a missing operand is not.
    res.converged = nb >= 0 && bs >= 0 && (nb == 0 || bs == 0);
    g.sync();
    return res;
  }
  const long len = padded_size(nb, bs);
  const int n = nb * bs;
  T* r = scratch;
  T* z = r + len;
  T* p = z + len;
  T* sp = p + len;
  T* red = sp + len;

  // Pads of the work vectors are zero so that bdmv may read them.
  for (int i = g.rank(); i < bs; i += g.size()) {
    r[i] = z[i] = p[i] = sp[i] = T(0);
    r[len - bs + i] = z[len - bs + i] = p[len - bs + i] = sp[len - bs + i] = T(0);
  }
  bdmv<BS>(g, nb, bs, sp, S, x);
  for (int i = g.rank(); i < n; i += g.size()) r[bs + i] = gamma[bs + i] - sp[bs + i];
  g.sync();
  if (Pinv != nullptr) {
    bdmv<BS>(g, nb, bs, z, p, Pinv, r);
  } else {
    for (int i = g.rank(); i < n; i += g.size()) z[bs + i] = p[bs + i] = r[bs + i];
    g.sync();
  }
  T eta = dot(g, n, r + bs, z + bs, red);
  const T eta0 = eta;
  auto done = [&](T e) {
    if (e == T(0)) return true;
    return opt.stop == PcgStop::Relative ? abs(e) < opt.abs_tol + opt.rel_tol * abs(eta0) : abs(e) < opt.abs_tol;
  };
  if (!isfinite(eta)) return res;
  if (done(eta)) {
    res.converged = true;
    return res;
  }
  for (int it = 1; it <= opt.max_iters; ++it) {
    if (stop(it)) {
      res.stopped = true;
      return res;
    }
    bdmv<BS>(g, nb, bs, sp, S, p);
    const T psp = dot(g, n, p + bs, sp + bs, red);
    res.iterations = it;
    if (!isfinite(psp) || !(psp > T(0))) return res;
    const T alpha = eta / psp;
    for (int i = g.rank(); i < n; i += g.size()) {
      x[bs + i] += alpha * p[bs + i];
      r[bs + i] -= alpha * sp[bs + i];
    }
    g.sync();
    if (Pinv != nullptr) {
      bdmv<BS>(g, nb, bs, z, Pinv, r);
    } else {
      for (int i = g.rank(); i < n; i += g.size()) z[bs + i] = r[bs + i];
      g.sync();
    }
    const T eta_next = dot(g, n, r + bs, z + bs, red);
    if (!isfinite(eta_next)) return res;
    if (done(eta_next)) {
      res.converged = true;
      return res;
    }
    const T beta = eta_next / eta;
    for (int i = g.rank(); i < n; i += g.size()) p[bs + i] = z[bs + i] + beta * p[bs + i];
    g.sync();
    eta = eta_next;
  }
  return res;
}

}  // namespace knot::linalg
