// A trajectory writer's flush timer (the GSD and H5MD writers): a background thread that
// flushes the writer once the oldest write since its last flush is `seconds` old, whether or
// not another write follows. This is how output.*.flush_seconds is kept on the clock
// (docs/output.md, "Flush policy"): a frame is flushed at most `seconds` after it was written
// (plus the time a write in progress holds the writer's lock), however long the run then takes
// to its next frame.
//
// The writer tells the timer what happens to its file: mark_unflushed() after each write (the
// first one since a flush starts the clock), flushed() from each of its flushes (the clock
// stops), and stops the timer (stop(), or the destructor) before it closes the file. The timer
// calls the writer's flush function with the writer's lock held, so a flush never sees half a
// frame. Its own lock is taken after the writer's, never before: mark_unflushed(), flushed() and
// take_error() may be called with the writer's lock held; stop() must not be (it waits for a
// flush that waits for that lock).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace pairmd {

class TimedFlusher {
 public:
  TimedFlusher() = default;
  ~TimedFlusher() { stop(); }
  TimedFlusher(const TimedFlusher&) = delete;
  TimedFlusher& operator=(const TimedFlusher&) = delete;

  // Starts the thread (once), unless `seconds` <= 0 (the writer then flushes after every write
  // itself, and there is no timer). `flush` runs on the thread with `writer_mutex` locked and
  // returns whether the writer can go on flushing: false once it failed or closed, and the timer
  // then waits for the next mark_unflushed(). An exception from `flush` counts as false; its
  // message is kept for take_error().
  template <typename Mutex>
  void start(double seconds, Mutex& writer_mutex, std::function<bool()> flush) {
    start_thread(seconds, [this, &writer_mutex, flush = std::move(flush)] {
      std::lock_guard<Mutex> lock(writer_mutex);
      return call_flush(flush);
    });
  }
  // Stops and joins the thread: a flush in progress ends first, and none starts after stop()
  // returns. Does nothing if the thread was not started or is stopped already.
  void stop();
  bool running() const { return thread_.joinable(); }

  // Something was written since the last flush; the first call after a flush starts the clock.
  void mark_unflushed();
  // The writer flushed (on any thread): nothing is waiting for the timer.
  void flushed();
  // Asks the thread to flush at once, whatever the clock says; returns without waiting for it.
  void flush_now();
  // The message of a timed flush that threw ("" if none), cleared by the call: the writer
  // reports it from its next write.
  std::string take_error();

 private:
  void start_thread(double seconds, std::function<bool()> locked_flush);
  bool call_flush(const std::function<bool()>& flush);
  void loop(std::chrono::steady_clock::duration interval, const std::function<bool()>& locked_flush);

  std::thread thread_;
  std::mutex mutex_;  // guards the fields below
  std::condition_variable wake_;
  bool stop_ = false;
  bool now_ = false;  // flush_now() was called
  bool unflushed_ = false;
  std::chrono::steady_clock::time_point unflushed_since_;
  std::string error_;
};

}  // namespace pairmd
