#include "core/threads.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#if !defined(__EMSCRIPTEN__)
#include <condition_variable>
#endif

namespace attn {

size_t hardware_threads() {
#if defined(__EMSCRIPTEN__)
  return 1;
#else
  return std::max(1u, std::thread::hardware_concurrency());
#endif
}

#if defined(__EMSCRIPTEN__)
struct ThreadPool::State {};
ThreadPool::ThreadPool(size_t) : size_(1) {}
ThreadPool::~ThreadPool() = default;
void ThreadPool::parallel_for(size_t count, const std::function<void(size_t)>& fn) {
  for (size_t i = 0; i < count; ++i) fn(i);
}
#else

// Workers sleep on a condition variable between jobs; a job is a shared counter of items that every
// thread (the caller included) takes from until none are left.
struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable wake, done;
  std::vector<std::thread> workers;
  const std::function<void(size_t)>* fn = nullptr;
  size_t count = 0, generation = 0, busy = 0;
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  bool stop = false;

  void run_items() {
    for (size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        (*fn)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
      }
    }
  }
  void worker_loop() {
    size_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stop || generation != seen; });
        if (stop) return;
        seen = generation;
      }
      run_items();
      std::lock_guard<std::mutex> lock(mutex);
      if (--busy == 0) done.notify_one();
    }
  }
};

ThreadPool::ThreadPool(size_t threads) : size_(threads ? threads : hardware_threads()), state_(new State) {
  for (size_t i = 1; i < size_; ++i) state_->workers.emplace_back([s = state_.get()] { s->worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
  }
  state_->wake.notify_all();
  for (auto& w : state_->workers) w.join();
}

void ThreadPool::parallel_for(size_t count, const std::function<void(size_t)>& fn) {
  State& s = *state_;
  if (size_ == 1 || count <= 1) {
    for (size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.fn = &fn;
    s.count = count;
    s.next = 0;
    s.error = nullptr;
    s.busy = s.workers.size();
    ++s.generation;
  }
  s.wake.notify_all();
  s.run_items();
  std::unique_lock<std::mutex> lock(s.mutex);
  s.done.wait(lock, [&] { return s.busy == 0; });
  if (s.error) std::rethrow_exception(s.error);
}
#endif

}  // namespace attn
