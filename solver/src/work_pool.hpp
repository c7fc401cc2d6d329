// WorkPool: a fixed set of worker threads, made at construction, that run the items [0, count) of a
// round together with the calling thread (private to knot::solver).
//
// Items are handed out by one atomic counter, so which thread runs an item depends on timing; the
// callers make that harmless by giving each item its own outputs and each thread its own scratch
// (the `worker` index: 0 is the calling thread). Between rounds the workers poll briefly, then sleep
// on a condition variable: Solver's rounds (the knots of one linearization or trial point) come
// microseconds apart within an iteration, BatchSolver's (whole solves) far apart. Nothing here
// allocates after construction: the round is a function pointer, a context and three counters.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace knot::solver {

class WorkPool {
 public:
  using Fn = void (*)(void* ctx, int item, int worker);

  explicit WorkPool(int threads);  // threads >= 1: threads - 1 workers start here (none for 1)
  ~WorkPool();
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // The cores this process may run on (its CPU affinity, so `taskset -c 0` counts one), at least 1;
  // what a thread count of 0 ("every core") resolves to.
  static int available_cores();
  // fn(ctx, item, worker) for every item in [0, count), on the calling thread and the workers;
  // returns when all are done. An exception from fn (on any thread) is rethrown here once the
  // round is over, the first one caught; the other items still run. Without workers the items run
  // in order on the calling thread, and an exception leaves at once.
  void run(int count, Fn fn, void* ctx);

 private:
  void work(int worker);
  void take(int worker);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_, done_;
  std::atomic<std::uint64_t> generation_{0};  // rounds opened by run()
  std::atomic<int> running_{0};               // workers not yet done with the current round
  std::atomic<int> next_{0};                  // the next item to hand out
  std::atomic<bool> stop_{false};
  std::exception_ptr error_;  // the round's first exception (under mutex_)
  std::chrono::microseconds spin_{0};  // how long to poll before sleeping (0 with more threads than cores)
  int count_ = 0;
  Fn fn_ = nullptr;
  void* ctx_ = nullptr;
};

}  // namespace knot::solver
