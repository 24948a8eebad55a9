// grid_threads.h — the host threads that run an emulated grid's threads
// (cuda_emulation.h's runGrid), kept for the next launch.
//
// Every task gets a thread of its own at once (an idle one, or a new one
// where none is idle): a grid's threads wait for each other at barriers,
// and a block may wait for a block of another grid, so no task may wait
// for another to finish.  A thread started and joined per emulated thread
// instead was a fifth of the emulated device tests' time under ASan (one
// test started 57,595 threads, each a stack, its shadow and an alternate
// signal stack set up and torn down for ASan; CI's serial ASan entries
// took 280 s that way and 227 s with kept threads).
//
// Under TSan a grid's threads stay fresh threads: handing a thread that
// ran one kernel to the launcher of the next one would tell TSan that the
// first kernel happened before the second launch, and hide the races a
// missing stream or event wait leaves between them.
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#define COLL_EMU_FRESH_GRID_THREADS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COLL_EMU_FRESH_GRID_THREADS 1
#endif
#endif

namespace coll::emu {

class GridThreads {
 public:
  // Runs every task of `tasks`, each on its own thread, all at once;
  // returns when all have returned.
  static void runAll(std::vector<std::function<void()>>& tasks) {
#if defined(COLL_EMU_FRESH_GRID_THREADS)
    std::vector<std::thread> all;
    all.reserve(tasks.size());
    for (auto& task : tasks) all.emplace_back(std::move(task));
    for (auto& th : all) th.join();
#else
    // The count and its lock live in this frame: the last task's worker
    // lets go of the lock after it notifies, so this returns (and the frame
    // goes) only after the workers' last touch of it.
    std::mutex m;
    std::condition_variable allDone;
    size_t running = tasks.size();
    GridThreads& pool = instance();
    for (auto& task : tasks)
      pool.start([&, task = std::move(task)] {
        task();
        std::lock_guard<std::mutex> lock(m);
        if (--running == 0) allDone.notify_all();
      });
    std::unique_lock<std::mutex> lock(m);
    allDone.wait(lock, [&] { return running == 0; });
#endif
  }

 private:
  struct Worker {
    GridThreads* pool;
    std::mutex m;
    std::condition_variable cv;
    std::function<void()> task;
  };

  // Never destroyed: idle workers wait in it until the process ends.
  static GridThreads& instance() {
    static GridThreads* pool = [] {
      // A forked child has none of the parent's threads: it starts an
      // empty pool.  The parent's stays reachable (no leak report), with
      // any lock a thread of the parent held in it at the fork.
      pthread_atfork(nullptr, nullptr, [] {
        static auto* const abandoned = new std::vector<GridThreads*>;
        abandoned->push_back(pool);
        pool = new GridThreads;
      });
      return new GridThreads;
    }();
    return *pool;
  }

  void start(std::function<void()> task) {
    Worker* w = nullptr;
    bool fresh = false;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!idle_.empty()) {
        w = idle_.back();
        idle_.pop_back();
      } else {
        workers_.push_back(std::make_unique<Worker>());
        w = workers_.back().get();
        w->pool = this;
        fresh = true;
      }
    }
    {
      std::lock_guard<std::mutex> lock(w->m);
      w->task = std::move(task);
    }
    if (!fresh) {
      w->cv.notify_one();
      return;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    const int rc = pthread_create(&thread, &attr, &GridThreads::serve, w);
    pthread_attr_destroy(&attr);
    // A grid that cannot have all its threads cannot run at all (with
    // std::thread this was std::terminate as well).
    if (rc != 0) {
      std::fprintf(stderr, "coll::emu: cannot start a grid thread: %s\n", std::strerror(rc));
      std::abort();
    }
  }

  // A worker's thread: a plain detached pthread (std::thread would keep its
  // state on the heap, owned by the thread alone).
  static void* serve(void* arg) {
    Worker* w = static_cast<Worker*>(arg);
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(w->m);
        w->cv.wait(lock, [w] { return static_cast<bool>(w->task); });
        task = std::move(w->task);
        w->task = nullptr;
      }
      task();
      task = nullptr;
      std::lock_guard<std::mutex> lock(w->pool->m_);
      w->pool->idle_.push_back(w);
    }
  }

  std::mutex m_;
  std::vector<std::unique_ptr<Worker>> workers_;  // every worker, idle or not
  std::vector<Worker*> idle_;
};

}  // namespace coll::emu
