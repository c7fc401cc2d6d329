#include "work_pool.hpp"

#if defined(__linux__)
#include <sched.h>
#endif

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace knot::solver {
namespace {

// How long a thread polls for the next round (a worker) or the round's end (the caller) before it
// blocks on the condition variable. Measured on iiwa14_reach (N = 64 and 128, auto and
// Gauss-Newton, two threads on this 2-vCPU machine, 5 interleaved rounds): polling 0, 50 and 200 us
// were within the noise of one another (docs/BENCHMARKS.md, "Knots on several threads"); a short
// poll saves the wake-up where the serial phases are short, and costs a loaded machine little. A
// pool with more threads than cores never polls: there a polling worker takes the core that the
// thread it waits for needs.
constexpr std::chrono::microseconds kSpin{50};

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` until it holds or `spin` has passed; the clock is read every 64 polls.
template <class Ready>
bool spin_until(Ready ready, std::chrono::microseconds spin) {
  if (spin.count() == 0) return ready();
  const auto until = std::chrono::steady_clock::now() + spin;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    relax();
    if (i % 64 == 0) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::yield();
    }
  }
}

}  // namespace

int WorkPool::available_cores() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

WorkPool::WorkPool(int threads) {
  if (threads < 1) throw std::invalid_argument("WorkPool: threads must be >= 1, found " + std::to_string(threads));
  spin_ = threads <= available_cores() ? kSpin : std::chrono::microseconds{0};
  workers_.reserve(static_cast<std::size_t>(threads - 1));
  for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { work(w); });
}

WorkPool::~WorkPool() {
  {
    std::lock_guard lock(mutex_);
    stop_.store(true, std::memory_order_release);
  }
  start_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void WorkPool::take(int worker) {
  for (int i = next_.fetch_add(1, std::memory_order_relaxed); i < count_; i = next_.fetch_add(1, std::memory_order_relaxed)) {
    try {
      fn_(ctx_, i, worker);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void WorkPool::work(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    const auto opened = [&] {
      return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(opened, spin_)) {
      std::unique_lock lock(mutex_);
      start_.wait(lock, opened);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    take(worker);
    // The last worker out wakes run() if it sleeps; the lock orders this with its predicate check.
    if (running_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);
      done_.notify_one();
    }
  }
}

void WorkPool::run(int count, Fn fn, void* ctx) {
  if (workers_.empty()) {
    for (int i = 0; i < count; ++i) fn(ctx, i, 0);
    return;
  }
  // Every worker takes part in every round (run() returns only after each has counted itself out),
  // so these plain fields are read only after the generation's release below.
  fn_ = fn;
  ctx_ = ctx;
  count_ = count;
  next_.store(0, std::memory_order_relaxed);
  running_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  start_.notify_all();
  take(0);
  const auto finished = [&] { return running_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished, spin_)) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, finished);
  }
  if (error_) {
    std::exception_ptr error;
    std::swap(error, error_);
    std::rethrow_exception(error);
  }
}

}  // namespace knot::solver
