// Lock annotations checked by clang's -Wthread-safety (the TSan build compiles with clang and that warning
// as an error; GCC sees empty macros), and a mutex type that carries them.
//
// Why a wrapper: libstdc++'s std::mutex is not annotated, so clang cannot tell which lock a std::lock_guard
// holds. core::Mutex is a std::mutex with the capability attribute; core::MutexLock is the scoped guard. A
// condition variable waits on it through std::condition_variable_any (core::CondVar), which accepts any
// BasicLockable; the wait itself is marked as holding the lock, which is true on return.
//
// Usage:
//   mutable core::Mutex mu_;
//   std::deque<Item> queue_ TEPHRA_GUARDED_BY(mu_);
//   void PopLocked() TEPHRA_REQUIRES(mu_);
//   { core::MutexLock l(mu_); queue_.push_back(x); }
#pragma once

#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define TEPHRA_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TEPHRA_THREAD_ANNOTATION(x)
#endif

#define TEPHRA_CAPABILITY(x) TEPHRA_THREAD_ANNOTATION(capability(x))
#define TEPHRA_SCOPED_CAPABILITY TEPHRA_THREAD_ANNOTATION(scoped_lockable)
#define TEPHRA_GUARDED_BY(x) TEPHRA_THREAD_ANNOTATION(guarded_by(x))
#define TEPHRA_PT_GUARDED_BY(x) TEPHRA_THREAD_ANNOTATION(pt_guarded_by(x))
#define TEPHRA_REQUIRES(...) TEPHRA_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define TEPHRA_EXCLUDES(...) TEPHRA_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define TEPHRA_REQUIRES_SHARED(...) TEPHRA_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define TEPHRA_ACQUIRE(...) TEPHRA_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define TEPHRA_ACQUIRE_SHARED(...) TEPHRA_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define TEPHRA_RELEASE(...) TEPHRA_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TEPHRA_RELEASE_SHARED(...) TEPHRA_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TEPHRA_TRY_ACQUIRE(...) TEPHRA_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TEPHRA_NO_THREAD_SAFETY_ANALYSIS TEPHRA_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace tephra::core {

class TEPHRA_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock() TEPHRA_ACQUIRE() { m_.lock(); }
  void unlock() TEPHRA_RELEASE() { m_.unlock(); }
  bool try_lock() TEPHRA_TRY_ACQUIRE(true) { return m_.try_lock(); }

 private:
  std::mutex m_;
};

// Holds `mu` for its scope. Unlock()/Lock() let a scope drop the lock around a call (an RPC, a callback).
class TEPHRA_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TEPHRA_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() TEPHRA_RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  void Unlock() TEPHRA_RELEASE() {
    mu_.unlock();
    held_ = false;
  }
  void Lock() TEPHRA_ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  // For condition variables: BasicLockable over the same mutex.
  void lock() TEPHRA_ACQUIRE() { Lock(); }
  void unlock() TEPHRA_RELEASE() { Unlock(); }

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A reader/writer mutex (std::shared_mutex) for data many threads read at once: writers take it with
// WriterMutexLock, readers with ReaderMutexLock. Members are GUARDED_BY it as usual; the analysis then allows
// reads under either lock and writes only under the writer's.
class TEPHRA_CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;
  void lock() TEPHRA_ACQUIRE() { m_.lock(); }
  void unlock() TEPHRA_RELEASE() { m_.unlock(); }
  void lock_shared() TEPHRA_ACQUIRE_SHARED() { m_.lock_shared(); }
  void unlock_shared() TEPHRA_RELEASE_SHARED() { m_.unlock_shared(); }

 private:
  std::shared_mutex m_;
};

class TEPHRA_SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex& mu) TEPHRA_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterMutexLock() TEPHRA_RELEASE() { mu_.unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

class TEPHRA_SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex& mu) TEPHRA_ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderMutexLock() TEPHRA_RELEASE() { mu_.unlock_shared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex& mu_;
};

// A condition variable for core::Mutex. Wait* must be called with the lock held (through `l`); they return
// with it held again.
class CondVar {
 public:
  void NotifyOne() { cv_.notify_one(); }
  void NotifyAll() { cv_.notify_all(); }
  template <typename Pred>
  void Wait(MutexLock& l, Pred pred) {
    cv_.wait(l, pred);
  }
  void Wait(MutexLock& l) { cv_.wait(l); }
  template <typename TimePoint>
  std::cv_status WaitUntil(MutexLock& l, const TimePoint& t) {
    return cv_.wait_until(l, t);
  }
  template <typename TimePoint, typename Pred>
  bool WaitUntil(MutexLock& l, const TimePoint& t, Pred pred) {
    return cv_.wait_until(l, t, pred);
  }
  template <typename Duration, typename Pred>
  bool WaitFor(MutexLock& l, const Duration& d, Pred pred) {
    return cv_.wait_for(l, d, pred);
  }

 private:
  std::condition_variable_any cv_;
};

}  // namespace tephra::core
