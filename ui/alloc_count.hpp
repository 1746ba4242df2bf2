// Counts heap allocations (the global operator new and ImGui's allocator) so the shells can show and
// the tests can check that an idle frame allocates nothing. Linking ui/alloc_count.cpp (any program
// that calls allocation_count) replaces the global operator new with a counting malloc wrapper.
#pragma once
#include <cstdint>

namespace attn::ui {

uint64_t allocation_count();
// Routes ImGui's allocations through the counter; call before ImGui::CreateContext.
void count_imgui_allocations();

}  // namespace attn::ui
