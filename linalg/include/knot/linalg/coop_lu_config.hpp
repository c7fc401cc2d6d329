// Configuration of the cooperative LU (coop_lu.hpp): options, operand residency, strides, the
// workspace size, and two barrier adapters.
//
// CoopLuConfig      rows_per_thread, layout, row interchanges, relative pivot threshold, singular
//                   floor. A structural type: it is passed as a template argument.
// CoopLuResidency   internal (the caller's thread-local slice) or external (the whole strided
//                   object) for the matrix, the pivots and the right-hand side.
// FixedStride<S>    a stride known at compile time; any integer works as a run-time stride.
// coop_lu_workspace_size(n, rows_per_thread)
//                   elements of T per system: 2 barrier slots, then the solver's exchange area.
// CallbackGroup     a group from a rank, a size and any barrier callable (a wider barrier such as
//                   __syncthreads() over a block that holds several systems).
// WorkspaceBarrierGroup (host only)
//                   a group whose barrier lives in the first two workspace elements, so real threads
//                   share it with nothing but the workspace. Both elements must be zero before the
//                   first call; between calls the barrier leaves the counter at 0 and the phase at 0
//                   or 1. The solver never touches them.
#pragma once

#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "knot/linalg/group.hpp"

#if !KNOT_ON_DEVICE
#include <atomic>
#endif

namespace knot::linalg {

// How the stored array is read. S, the matrix the solver factors, is always the stored array read
// column-major: S = A under kColMajor, S = A' under kRowMajor (the default).
enum class LuLayout : int { kRowMajor = 0, kColMajor = 1 };

// kLogical: rows never move; the pivot array records the position of each physical row.
// kPhysical: rows move between slots as in LAPACK; the pivot array records the original index of
// the row at each position. Same pivots, same arithmetic, same results.
enum class LuInterchange : int { kLogical = 0, kPhysical = 1 };

struct CoopLuConfig {
  // Rows of S per thread (static solver; the dynamic one takes it at run time, this by default).
  int rows_per_thread = 1;
  LuLayout layout = LuLayout::kRowMajor;
  LuInterchange interchange = LuInterchange::kLogical;
  // tau in (0, 1]: the row in place is kept as pivot when |s_ii| >= tau max_k |s_ki| (and it is not
  // singular); otherwise the first row of largest magnitude is chosen. 1 is the LAPACK choice.
  double relative_pivot_threshold = 1.0;
  // A pivot p is singular unless |p| > 0 and |p| >= floor (NaN is singular). Negative: the smallest
  // normal number of the scalar type.
  double singular_floor = -1.0;
};

struct CoopLuResidency {
  bool matrix = false;
  bool pivots = false;
  bool rhs = false;
};

// A stride known at compile time (std::integral_constant's conversion is host-only under nvcc).
template <std::int64_t S>
struct FixedStride {
  static constexpr std::int64_t value = S;
  KNOT_HD constexpr operator std::int64_t() const { return S; }
};
inline constexpr FixedStride<1> kUnitStride{};

template <class T>
KNOT_HD constexpr T smallest_normal() {
  if constexpr (std::is_same_v<T, float>) {
    return FLT_MIN;
  } else if constexpr (std::is_same_v<T, double>) {
    return DBL_MIN;
  } else {
    return static_cast<T>(LDBL_MIN);
  }
}

// ceil(n / rows_per_thread); 1 for n = 0; 0 for an invalid rows_per_thread < 1.
KNOT_HD constexpr int coop_lu_threads_per_system(int n, int rows_per_thread) {
  return rows_per_thread < 1 ? 0 : n <= 0 ? 1 : (n + rows_per_thread - 1) / rows_per_thread;
}

namespace detail {
// Workspace map, in elements of T, for n rows and t threads per system. The factorization and the
// substitutions use disjoint phases, so their areas overlap.
struct CoopLuWorkspace {
  int n, t;
  // Host barrier of WorkspaceBarrierGroup: [0, 2).
  KNOT_HD constexpr int cand_val() const { return 2; }           // t: best magnitude per thread
  KNOT_HD constexpr int cand_pos() const { return 2 + t; }       // t: its position
  KNOT_HD constexpr int diag() const { return 2 + 2 * t; }       // 1: |s| of the row in place
  KNOT_HD constexpr int fold_rhs() const { return 3 + 2 * t; }   // 2: b_i of the row-major solve
  KNOT_HD constexpr int enter() const { return 5 + 2 * t; }      // n + 2: pivot row, rhs, index
  KNOT_HD constexpr int leave() const { return 7 + 2 * t + n; }  // n + 2: row leaving position i
  KNOT_HD constexpr int factor_end() const { return 9 + 2 * t + 2 * n; }
  KNOT_HD constexpr int xs() const { return 2; }                // n: solution entries
  KNOT_HD constexpr int row_buf() const { return 2 + n; }       // 2n: double-buffered row
  KNOT_HD constexpr int step_buf() const { return 2 + 3 * n; }  // 4: double-buffered pair
  KNOT_HD constexpr int gather() const { return 6 + 3 * n; }    // n: permutation of the rhs
  KNOT_HD constexpr int subst_end() const { return 6 + 4 * n; }
  KNOT_HD constexpr int size() const { return factor_end() > subst_end() ? factor_end() : subst_end(); }
};
}  // namespace detail

// Elements of T per system, the two barrier slots included. Every entry point uses at most this.
KNOT_HD constexpr int coop_lu_workspace_size(int n, int rows_per_thread) {
  return detail::CoopLuWorkspace{n, coop_lu_threads_per_system(n, rows_per_thread)}.size();
}

// A group made of a rank, a size and a barrier callable invoked by every member.
template <class Sync>
struct CallbackGroup {
  int rank_;
  int size_;
  Sync sync_;
  KNOT_HD int rank() const { return rank_; }
  KNOT_HD int size() const { return size_; }
  KNOT_HD void sync() { sync_(); }
};

template <class Sync>
KNOT_HD CallbackGroup<Sync> make_callback_group(int rank, int size, Sync sync) {
  return CallbackGroup<Sync>{rank, size, sync};
}

#if !KNOT_ON_DEVICE
// Host barrier held in work[0] (arrival counter) and work[1] (phase), sense-reversing: the last
// arrival resets the counter, then flips the phase with release semantics; the others spin briefly,
// then sleep on the phase (std::atomic_ref::wait). The acquire on the phase orders every member's
// writes before the barrier before every member's reads after it.
template <class T>
class WorkspaceBarrierGroup {
 public:
  WorkspaceBarrierGroup(int rank, int size, T* work) : rank_(rank), size_(size), work_(work) {}
  int rank() const { return rank_; }
  int size() const { return size_; }
  void sync() const {
    if (size_ <= 1) return;
    std::atomic_ref<T> count(work_[0]);
    std::atomic_ref<T> phase(work_[1]);
    const T seen = phase.load(std::memory_order_acquire);
    if (count.fetch_add(T(1), std::memory_order_acq_rel) == static_cast<T>(size_ - 1)) {
      count.store(T(0), std::memory_order_relaxed);
      phase.store(seen == T(0) ? T(1) : T(0), std::memory_order_release);
      phase.notify_all();
      return;
    }
    for (int spins = 0; phase.load(std::memory_order_acquire) == seen; ++spins)
      if (spins >= 64) phase.wait(seen, std::memory_order_acquire);
  }

 private:
  int rank_;
  int size_;
  T* work_;
};
#endif

}  // namespace knot::linalg
