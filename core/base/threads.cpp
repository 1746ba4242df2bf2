#include "core/base/threads.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#include <system_error>
#if !defined(__EMSCRIPTEN__) || defined(__EMSCRIPTEN_PTHREADS__)
#include <condition_variable>
#endif

namespace attn {

size_t hardware_threads() {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  return 1;
#else
  return std::max(1u, std::thread::hardware_concurrency());
#endif
}

#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
struct ThreadPool::State {};
ThreadPool::ThreadPool(size_t) : size_(1) {}
ThreadPool::~ThreadPool() = default;
void ThreadPool::parallel_for(size_t count, const std::function<void(size_t)>& fn) {
  for (size_t i = 0; i < count; ++i) fn(i);
}
#else

// Workers take items from a shared counter, the caller included. Between jobs they spin for a moment
// before sleeping on a condition variable, as does the caller waiting for the last items: a model runs
// its jobs back to back (a matrix multiply's packing, then its product, then the next layer's), and a
// futex wake-up costs tens of microseconds, a tenth of a small product on 2 threads.
namespace {

template <class Ready>
bool spin_until(const Ready& ready) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  while (!ready()) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    if (std::chrono::steady_clock::now() > until) return false;
  }
  return true;
}

}  // namespace

struct ThreadPool::State {
  std::mutex mutex;
  std::condition_variable wake, done;
  std::vector<std::thread> workers;
  const std::function<void(size_t)>* fn = nullptr;
  size_t count = 0;
  std::atomic<size_t> generation{0}, busy{0}, next{0};
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
      spin_until([&] { return generation.load() != seen; });
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [&] { return stop || generation.load() != seen; });
        if (stop) return;
        seen = generation.load();
      }
      run_items();
      if (busy.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mutex);
        done.notify_one();
      }
    }
  }
};

// A thread that cannot start leaves the pool smaller: on a web page every thread is a Web Worker started
// in advance (PTHREAD_POOL_SIZE), and asking for one more fails rather than waiting for the page.
ThreadPool::ThreadPool(size_t threads) : size_(threads ? threads : hardware_threads()), state_(new State) {
  try {
    for (size_t i = 1; i < size_; ++i) state_->workers.emplace_back([s = state_.get()] { s->worker_loop(); });
  } catch (const std::system_error&) {
    size_ = state_->workers.size() + 1;
  }
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
  if (!spin_until([&] { return s.busy.load() == 0; })) {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.done.wait(lock, [&] { return s.busy.load() == 0; });
  }
  std::lock_guard<std::mutex> lock(s.mutex);  // the workers' writes (error) are visible past here
  if (s.error) std::rethrow_exception(s.error);
}
#endif

}  // namespace attn
