// A small pool of worker threads for the kernels. Work is split into items that each thread computes
// whole, so results never depend on the number of threads. In WebAssembly the threads are Web Workers (a
// pthreads build); without pthreads the pool is the calling thread alone.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>

namespace attn {

class ThreadPool {
 public:
  explicit ThreadPool(size_t threads);  // 0 = every core; fewer when threads cannot start (size())
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  size_t size() const { return size_; }
  // fn(i) for i in [0, count), spread over the threads; returns when all are done. The first
  // exception thrown by an item is rethrown here.
  void parallel_for(size_t count, const std::function<void(size_t)>& fn);

 private:
  struct State;
  size_t size_;
  std::unique_ptr<State> state_;
};

size_t hardware_threads();

// Whether std::thread can start a thread here: everywhere but a WebAssembly build without pthreads.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
inline constexpr bool threads_available = false;
#else
inline constexpr bool threads_available = true;
#endif

}  // namespace attn
