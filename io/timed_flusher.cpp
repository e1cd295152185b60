#include "io/timed_flusher.h"

#include <exception>
#include <stdexcept>

namespace pairmd {

void TimedFlusher::start_thread(double seconds, std::function<bool()> locked_flush) {
  if (seconds <= 0) return;
  if (thread_.joinable()) throw std::logic_error("TimedFlusher::start: the timer runs already");
  const auto interval =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  thread_ = std::thread([this, interval, f = std::move(locked_flush)] { loop(interval, f); });
}

void TimedFlusher::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lk(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void TimedFlusher::mark_unflushed() {
  std::lock_guard<std::mutex> lk(mutex_);
  if (unflushed_) return;
  unflushed_ = true;
  unflushed_since_ = std::chrono::steady_clock::now();
  wake_.notify_all();
}

void TimedFlusher::flushed() {
  std::lock_guard<std::mutex> lk(mutex_);
  unflushed_ = false;
}

void TimedFlusher::flush_now() {
  std::lock_guard<std::mutex> lk(mutex_);
  now_ = true;
  wake_.notify_all();
}

std::string TimedFlusher::take_error() {
  std::lock_guard<std::mutex> lk(mutex_);
  std::string e;
  e.swap(error_);
  return e;
}

// Runs with the writer's lock held, so that the writer's next write (which takes that lock and
// then take_error()) sees the error of a flush that failed before it.
bool TimedFlusher::call_flush(const std::function<bool()>& flush) {
  try {
    return flush();
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lk(mutex_);
    error_ = e.what();
  } catch (...) {
    std::lock_guard<std::mutex> lk(mutex_);
    error_ = "unknown error";
  }
  return false;
}

void TimedFlusher::loop(std::chrono::steady_clock::duration interval, const std::function<bool()>& locked_flush) {
  std::unique_lock<std::mutex> lk(mutex_);
  while (!stop_) {
    if (!now_) {
      if (!unflushed_) {
        wake_.wait(lk);
        continue;
      }
      const auto due = unflushed_since_ + interval;
      if (std::chrono::steady_clock::now() < due) {
        wake_.wait_until(lk, due);
        continue;
      }
    }
    now_ = false;
    lk.unlock();
    const bool more = locked_flush();  // takes the writer's lock: never with ours held
    lk.lock();
    if (!more) unflushed_ = false;  // nothing more will be flushed until the next write
  }
}

}  // namespace pairmd
