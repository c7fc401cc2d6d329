// Counts heap allocations: replaces the global operator new and delete (every form) of the test
// executable that includes it. Include it in exactly ONE source file of an executable.
// allocations_during(fn) returns the allocations fn made; tests use it to prove solve() allocates
// nothing, and each such suite first shows the counter does count (its negative control).
// largest_allocation_during(fn) returns the largest single request fn made, in bytes (a size-
// proportional check: a weight of dimension n that was expanded shows as n^2 doubles), and
// failing_allocation(k, fn) makes fn's k-th allocation (from 0) throw std::bad_alloc.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace knot::test::alloc_detail {
inline std::atomic<bool> counting{false};
inline std::atomic<long> allocations{0};
inline std::atomic<std::size_t> largest{0};
inline std::atomic<long> fail_at{-1};  // the allocation (counted from 0 while counting) that throws

inline void* counted(std::size_t n, std::size_t align) {
  if (counting.load(std::memory_order_relaxed)) {
    const long index = allocations.fetch_add(1, std::memory_order_relaxed);
    if (index == fail_at.load(std::memory_order_relaxed)) throw std::bad_alloc();
    std::size_t seen = largest.load(std::memory_order_relaxed);
    while (n > seen && !largest.compare_exchange_weak(seen, n, std::memory_order_relaxed)) {
    }
  }
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align) : std::malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

inline void* counted_nothrow(std::size_t n) noexcept {
  try {
    return counted(n, 0);
  } catch (...) {
    return nullptr;
  }
}
}  // namespace knot::test::alloc_detail

void* operator new(std::size_t n) { return knot::test::alloc_detail::counted(n, 0); }
void* operator new[](std::size_t n) { return knot::test::alloc_detail::counted(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return knot::test::alloc_detail::counted(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return knot::test::alloc_detail::counted(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return knot::test::alloc_detail::counted_nothrow(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return knot::test::alloc_detail::counted_nothrow(n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace knot::test {

// Allocations made while fn runs (on any thread).
template <class Fn>
long allocations_during(Fn&& fn) {
  alloc_detail::allocations = 0;
  alloc_detail::counting = true;
  fn();
  alloc_detail::counting = false;
  return alloc_detail::allocations.load();
}

// The largest single allocation fn made, in bytes.
template <class Fn>
std::size_t largest_allocation_during(Fn&& fn) {
  alloc_detail::largest = 0;
  allocations_during(fn);
  return alloc_detail::largest.load();
}

// Runs fn with its k-th allocation (from 0) throwing std::bad_alloc; false when fn made fewer
// than k + 1 allocations (so the failure was never injected). Exceptions from fn propagate.
template <class Fn>
bool failing_allocation(long k, Fn&& fn) {
  struct Reset {
    ~Reset() {
      alloc_detail::counting = false;
      alloc_detail::fail_at = -1;
    }
  } reset;
  alloc_detail::allocations = 0;
  alloc_detail::fail_at = k;
  alloc_detail::counting = true;
  fn();
  return alloc_detail::allocations.load() > k;
}

}  // namespace knot::test
