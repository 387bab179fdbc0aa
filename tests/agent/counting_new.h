// The global operator new and delete, replaced so that a test can count
// allocations: every new calls countAllocation(), which the including test
// defines (what to count: everything while armed, or one thread's). Include
// it from exactly one file of a test executable of its own.
#pragma once

#include <cstdlib>
#include <new>

void countAllocation();

void* operator new(size_t n) {
  countAllocation();
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  countAllocation();
  return std::malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
