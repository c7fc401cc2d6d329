// Counts heap allocations: replaces the global operator new and delete (every form) of the test
// executable that includes it. Include it in exactly ONE source file of an executable.
// allocations_during(fn) returns the allocations fn made; tests use it to prove solve() allocates
// nothing, and each such suite first shows the counter does count (its negative control).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace knot::test::alloc_detail {
inline std::atomic<bool> counting{false};
inline std::atomic<long> allocations{0};

inline void* counted(std::size_t n, std::size_t align) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
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

}  // namespace knot::test
