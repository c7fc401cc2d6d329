// ThreadedGroup: a group of real std::threads sharing a std::barrier. Host only.
//
// Exists to test the cooperative logic of the primitives: a missing barrier or two members writing
// one element is a real data race here, reported by ThreadSanitizer, and a wrong strided loop gives
// a result that differs from the serial one.
#pragma once

#include <barrier>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "knot/linalg/group.hpp"

namespace knot::linalg {

class ThreadedGroup {
 public:
  ThreadedGroup(int rank, int size, std::barrier<>* barrier) : rank_(rank), size_(size), barrier_(barrier) {}
  int rank() const { return rank_; }
  int size() const { return size_; }
  void sync() const { barrier_->arrive_and_wait(); }

 private:
  int rank_;
  int size_;
  std::barrier<>* barrier_;
};

// Runs fn(ThreadedGroup&) on `threads` ranks, joins them, and rethrows the first exception any rank
// threw. A rank that throws leaves the barrier (arrive_and_drop) so the others never wait for it.
template <class Fn>
void run_threaded(int threads, Fn&& fn) {
  if (threads < 1) throw std::invalid_argument("run_threaded: threads must be >= 1");
  std::barrier<> barrier(threads);
  std::exception_ptr first;
  std::mutex mu;
  auto body = [&](int rank) {
    ThreadedGroup g(rank, threads, &barrier);
    try {
      fn(g);
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!first) first = std::current_exception();
      }
      barrier.arrive_and_drop();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int r = 1; r < threads; ++r) pool.emplace_back(body, r);
  body(0);
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace knot::linalg
