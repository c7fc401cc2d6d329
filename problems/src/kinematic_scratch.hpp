// Scratch shared by the end-effector cost and constraint terms (internal).
#pragma once

#include <array>
#include <cstddef>
#include <vector>

namespace knot::problems {

// Scratch for a 3 x nx kinematic Jacobian: on the stack up to kStackColumns states (every model
// Knot ships), else a per-thread buffer that grows once; evaluation stays allocation-free after
// the first call and terms stay shareable between threads.
class Jacobian3 {
 public:
  explicit Jacobian3(int nx) {
    if (nx <= kStackColumns) {
      data_ = stack_.data();
    } else {
      thread_local std::vector<double> heap;
      if (heap.size() < 3 * static_cast<std::size_t>(nx)) heap.resize(3 * static_cast<std::size_t>(nx));
      data_ = heap.data();
    }
  }
  Jacobian3(const Jacobian3&) = delete;
  Jacobian3& operator=(const Jacobian3&) = delete;
  double* data() { return data_; }

 private:
  static constexpr int kStackColumns = 64;
  std::array<double, 3 * kStackColumns> stack_;
  double* data_;
};

}  // namespace knot::problems
