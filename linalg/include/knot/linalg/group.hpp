// Execution groups: the one abstraction that lets every linalg primitive run on the CPU and GPU.
//
// A group is a set of `size()` cooperating threads; each knows its `rank()` in [0, size()) and
// `sync()` is a barrier that makes every member's writes visible to all members. Primitives are
// written once against this interface:
//
//   for (int i = g.rank(); i < n; i += g.size()) out[i] = ...;   // strided loop, one writer per i
//   g.sync();                                                      // between dependent phases
//
// Contract every primitive of linalg/ keeps:
//  * Every member calls the primitive with the same arguments (its own group object aside).
//  * Each output element is written by exactly one member, in an order of operations that does not
//    depend on size(): results are bitwise identical for every group size (thread-count
//    invariance). Reductions use a fixed pairwise tree over the element index (reduce.hpp), so
//    they are invariant too.
//  * The barrier sequence depends only on the dimensions, never on the data, so a wider barrier
//    (a whole warp or block) stays valid. A primitive ends on a barrier unless its comment says
//    otherwise: on return every output is visible to every member.
//  * Scratch is owned and sized by the caller (`*_scratch_size` constexpr functions); primitives
//    never allocate.
//
// Groups: SerialGroup (here; the CPU production path), ThreadedGroup (threaded_group.hpp; real
// std::threads and a std::barrier, for tests of the cooperative logic), BlockGroup and TileGroup
// (cuda/group.cuh; a CUDA thread block, and tiles of 1..32 lanes of a warp).
#pragma once

#include "knot/linalg/config.hpp"

namespace knot::linalg {

// One thread; sync() is a no-op. rank() and size() are constants, so strided loops compile to
// plain loops.
struct SerialGroup {
  KNOT_HD static constexpr int rank() { return 0; }
  KNOT_HD static constexpr int size() { return 1; }
  KNOT_HD static constexpr void sync() {}
};

#if !KNOT_DEVICE_CODE
}  // namespace knot::linalg
#include <concepts>
namespace knot::linalg {
template <class G>
concept Group = requires(G g) {
  { g.rank() } -> std::convertible_to<int>;
  { g.size() } -> std::convertible_to<int>;
  g.sync();
};
#endif

}  // namespace knot::linalg
