// The trajectory writers' flush timer (io/timed_flusher.h) on its own: a stand-in writer whose
// flush records when it ran. What the clock decides is checked exactly (a timed flush never
// comes before the oldest unflushed write is `seconds` old); what the machine's load could delay
// is given a generous limit (a flush that is due comes within 10 s), and "nothing happens" is
// checked by waiting a few intervals.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "io/timed_flusher.h"

namespace pairmd {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kDueWithin = 10s;  // a flush that is due comes within this, however loaded the machine

// A writer as the GSD and H5MD writers use the timer: its flush runs under its mutex and tells
// the timer it flushed; `ok` false plays a writer that failed (it flushes no more).
struct StandInWriter {
  std::mutex mutex;  // the writer's lock; also the lock of `done` and of the fields below
  std::condition_variable done;
  std::vector<Clock::time_point> flushes;
  bool ok = true;
  TimedFlusher flusher;  // last: stopped before the fields its flush uses go

  void start(double seconds) {
    flusher.start(seconds, mutex, [this] {
      if (!ok) {
        flushes.push_back(Clock::now());
        done.notify_all();
        return false;
      }
      flushes.push_back(Clock::now());
      flusher.flushed();
      done.notify_all();
      return true;
    });
  }
  // The number of flushes once there are `n` (or `limit` has passed).
  size_t wait_for(size_t n, Clock::duration limit = kDueWithin) {
    std::unique_lock<std::mutex> lk(mutex);
    done.wait_for(lk, limit, [&] { return flushes.size() >= n; });
    return flushes.size();
  }
  size_t count() {
    std::lock_guard<std::mutex> lk(mutex);
    return flushes.size();
  }
  Clock::time_point flush_time(size_t k) {
    std::lock_guard<std::mutex> lk(mutex);
    return flushes.at(k);
  }
};

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

TEST(TimedFlusher, FlushesOnceTheOldestUnflushedWriteIsSecondsOld) {
  const double interval = 0.2;
  StandInWriter w;
  w.start(interval);
  ASSERT_TRUE(w.flusher.running());
  std::this_thread::sleep_for(3 * 200ms);
  EXPECT_EQ(w.count(), 0u) << "flushed with nothing written";

  const Clock::time_point first_write = Clock::now();
  w.flusher.mark_unflushed();
  ASSERT_EQ(w.wait_for(1), 1u) << "nothing flushed a write " << kDueWithin.count() << " s old";
  EXPECT_GE(seconds_between(first_write, w.flush_time(0)), interval) << "flushed before the interval";

  // Later writes before the flush do not restart the clock: one flush for the three of them,
  // `interval` after the first.
  const Clock::time_point second_write = Clock::now();
  w.flusher.mark_unflushed();
  std::this_thread::sleep_for(50ms);
  w.flusher.mark_unflushed();
  w.flusher.mark_unflushed();
  ASSERT_EQ(w.wait_for(2), 2u);
  EXPECT_GE(seconds_between(second_write, w.flush_time(1)), interval);
  std::this_thread::sleep_for(3 * 200ms);
  EXPECT_EQ(w.count(), 2u) << "flushed again with nothing written since the last flush";
}

TEST(TimedFlusher, AFlushOfTheWriterStopsTheClock) {
  StandInWriter w;
  w.start(0.2);
  w.flusher.mark_unflushed();
  w.flusher.flushed();  // the writer flushed by itself (a checkpoint, or flush_seconds' byte limit)
  std::this_thread::sleep_for(3 * 200ms);
  EXPECT_EQ(w.count(), 0u) << "the timer flushed what the writer had flushed already";
}

TEST(TimedFlusher, FlushNowDoesNotWaitForTheClock) {
  StandInWriter w;
  w.start(3600);
  w.flusher.mark_unflushed();
  const Clock::time_point asked = Clock::now();
  w.flusher.flush_now();
  ASSERT_EQ(w.wait_for(1), 1u) << "flush_now() did not flush";
  EXPECT_LT(seconds_between(asked, w.flush_time(0)), std::chrono::duration<double>(kDueWithin).count());
  // Also with nothing marked, and only once per call.
  w.flusher.flush_now();
  ASSERT_EQ(w.wait_for(2), 2u);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(w.count(), 2u);
}

TEST(TimedFlusher, FlushesUnderTheWritersLock) {
  StandInWriter w;
  w.start(0.05);
  Clock::time_point released;
  {
    std::lock_guard<std::mutex> writing(w.mutex);  // a frame write in progress
    w.flusher.mark_unflushed();
    std::this_thread::sleep_for(400ms);  // the flush is long due
    EXPECT_EQ(w.flushes.size(), 0u) << "flushed while the writer held its lock";
    released = Clock::now();
  }
  ASSERT_EQ(w.wait_for(1), 1u);
  EXPECT_GE(w.flush_time(0), released);
}

TEST(TimedFlusher, StopWaitsForAFlushInProgressAndNothingFlushesAfterIt) {
  std::mutex writer;
  std::atomic<int> started{0}, finished{0};
  {
    TimedFlusher f;
    // A slow flush that never calls flushed(): the timer would flush again and again.
    f.start(0.01, writer, [&] {
      ++started;
      std::this_thread::sleep_for(300ms);
      ++finished;
      return true;
    });
    f.mark_unflushed();
    const Clock::time_point limit = Clock::now() + kDueWithin;
    while (started == 0 && Clock::now() < limit) std::this_thread::sleep_for(1ms);
    ASSERT_GE(started.load(), 1);
  }  // the destructor stops the timer
  EXPECT_EQ(finished.load(), started.load()) << "the destructor returned during a flush";
  const int after_stop = started;
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(started.load(), after_stop) << "a flush after the destructor";
}

TEST(TimedFlusher, StopIsFinal) {
  StandInWriter w;
  w.start(0.05);
  w.flusher.stop();
  EXPECT_FALSE(w.flusher.running());
  w.flusher.stop();  // again: nothing to do
  w.flusher.mark_unflushed();
  w.flusher.flush_now();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(w.count(), 0u) << "flushed after stop()";
}

TEST(TimedFlusher, ZeroSecondsStartsNoTimer) {
  StandInWriter w;
  w.start(0);
  EXPECT_FALSE(w.flusher.running());
  w.flusher.mark_unflushed();
  w.flusher.flush_now();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(w.count(), 0u);
}

// A failed writer does not flush (and does not call flushed()); the timer must wait for the next
// write instead of calling it again and again.
TEST(TimedFlusher, AFailedWriterIsNotCalledAgainUntilItsNextWrite) {
  StandInWriter w;
  w.ok = false;
  w.start(0.05);
  w.flusher.mark_unflushed();
  ASSERT_EQ(w.wait_for(1), 1u);
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(w.count(), 1u) << "the timer kept calling a writer that flushes no more";
  w.flusher.mark_unflushed();
  EXPECT_EQ(w.wait_for(2), 2u);
}

TEST(TimedFlusher, AFlushThatThrowsIsReportedOnceAndNotRetried) {
  std::mutex writer;
  std::condition_variable called;
  int calls = 0;
  TimedFlusher f;
  f.start(0.05, writer, [&]() -> bool {
    ++calls;
    called.notify_all();
    throw std::runtime_error("no room to go on writing");
  });
  EXPECT_EQ(f.take_error(), "");
  f.mark_unflushed();
  {
    std::unique_lock<std::mutex> lk(writer);
    // The error is kept before the timer lets go of the writer's lock: a write that takes the
    // lock after the failure sees it.
    ASSERT_TRUE(called.wait_for(lk, kDueWithin, [&] { return calls >= 1; }));
  }
  EXPECT_EQ(f.take_error(), "no room to go on writing");
  EXPECT_EQ(f.take_error(), "") << "the error is reported once";
  std::this_thread::sleep_for(400ms);
  std::lock_guard<std::mutex> lk(writer);
  EXPECT_EQ(calls, 1) << "a failed flush was retried without a new write";
}

}  // namespace
}  // namespace pairmd
