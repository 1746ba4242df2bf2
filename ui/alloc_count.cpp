#include "ui/alloc_count.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

#include <imgui.h>

namespace {

std::atomic<uint64_t> allocations{0};

void* counted_malloc(std::size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size ? size : 1);
}

void* imgui_alloc(size_t size, void*) { return counted_malloc(size); }
void imgui_free(void* p, void*) { std::free(p); }

}  // namespace

// The replaceable global allocation functions ([new.delete]); the aligned forms keep the library's
// own (they pair with its aligned delete).
void* operator new(std::size_t size) {
  if (void* p = counted_malloc(size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept { return counted_malloc(size); }
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept { return counted_malloc(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace attn::ui {

uint64_t allocation_count() { return allocations.load(std::memory_order_relaxed); }

void count_imgui_allocations() { ImGui::SetAllocatorFunctions(imgui_alloc, imgui_free, nullptr); }

}  // namespace attn::ui
