// The trajectory writer: an H5MD 1.1 file (HDF5, C API) holding particles/all (box, position
// with image, optional velocity and force, species, mass, charge), observables (energies,
// temperature, pressure), fields (potential maps), connectivity (bonds) and the run's YAML
// config under parameters/. Layout, units and the flush policy are documented in docs/output.md.
//
// Crash safety: HDF5 metadata is kept in memory (cache evictions off) and only written by a
// flush. A timer thread flushes once the oldest unflushed frame is
// output.trajectory.flush_seconds old (0: the writer flushes after every frame); the writer
// also flushes before every checkpoint and at the end. Particle frames are one chunk each and
// never rewritten, so a file killed between flushes still opens and holds every frame up to
// its last flush. A kill inside a flush leaves the same: the file is written through
// io/hdf5_ordered_driver.h, which writes a flush's metadata in an order where every prefix is a
// readable file, and the series are flushed steps and times first, positions last. Frames are written
// whole under HDF5's library lock (h5::library_mutex), so a flush never sees half a frame.
//
// Write-behind (flush_seconds > 0): observe() copies the frame and hands it to the writer's own
// thread, and the run goes on (its GPU steps while the frame is written; many replicas' writers, which HDF5 takes one
// at a time, no longer stop every replica). Frames are written in order by whoever next holds
// the library lock: that thread, the flush timer (whose clock starts at the hand-off, so
// flush_seconds holds from the frame's step), or any call that reads or writes the file (flush,
// finish, close, the other writes). One frame at a time: observe() hands a frame over once the
// one before is written. A write that fails (or a timed flush) is reported by the next
// observe(), flush() or finish(), with the same message as before; the file keeps the frames up
// to its last flush. With flush_seconds 0 observe() writes and flushes the frame itself, so a
// thermo row (written after the frame) means the frame is on disk.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/grid.h"
#include "engine/run_observer.h"
#include "io/timed_flusher.h"

namespace pairmd {

class H5mdWriter final : public RunObserver {
 public:
  // Creates `path` (which must not exist), or with `restart_step` >= 0 opens the existing file to
  // continue it: checks that it holds the same system (particle count, box) and drops every
  // frame after `restart_step`. `dof` is for the temperature observable. Throws
  // std::runtime_error naming the file and the problem.
  H5mdWriter(const std::string& path, const RunConfig& cfg, const SystemState& initial, const Topology& topology,
             double dof, int64_t restart_step = -1);
  ~H5mdWriter() override;
  H5mdWriter(const H5mdWriter&) = delete;
  H5mdWriter& operator=(const H5mdWriter&) = delete;

  int64_t next_step(int64_t step) const override;
  void observe(const RunContext& ctx, const Frame& frame) override;
  // Writes the final frame of a completed run, flushes and closes. After a write error the
  // file is left as it was at its last flush (not closed, so nothing half-written is added).
  void finish(const RunContext& ctx, const Frame& frame) override;

  // Appends a frame of a time series /fields/<name>/{step,time,value}, value shaped
  // [frames, nz, ny, nx] (x fastest, as Grid3::values), with attributes origin and spacing
  // (x, y, z order) and unit on value. A frame at or before the series' last step is skipped
  // (a restart repeats its first step).
  void write_grid_frame(const std::string& name, int64_t step, double time, const Grid3& grid);
  // Appends a value to the scalar time series /observables/<name>/{step,time,value} (the
  // pulling's force and extension, io/pull_log.h); a frame at or before its last step is skipped.
  void write_scalar_frame(const std::string& name, int64_t step, double time, double value, const std::string& unit);
  // A time-independent grid /fields/<name> [nz, ny, nx] with the same attributes, replaced on
  // every call (the potential-map observer names it potential_map_average).
  void write_grid(const std::string& name, const Grid3& grid);
  // Grids live in /fields, outside /observables: H5MD has no element for them, and readers that
  // index every observable by the position frame (MDAnalysis) would trip over them there.
  static std::string grid_series_path(const std::string& name) { return "/fields/" + name; }
  static std::string grid_average_path(const std::string& name) { return "/fields/" + name; }

  // Writes the frames handed over and makes everything durable against a kill of the process
  // (H5Fflush); throws a write error not yet reported (a checkpoint after it would go beyond
  // the file's frames).
  void flush();
  // Writes the frames handed over and closes the file; throws a write error not yet reported.
  void close();
  const std::string& path() const { return path_; }
  bool failed() const { return failed_.load(); }
  int64_t frames_written(const std::string& series);  // the frames handed over included
  // Frames a continued file held after the restart step and lost (the most of any series).
  int64_t frames_dropped() const { return frames_dropped_; }

 private:
  struct Series;
  // The series at `path`, created on first use; `clock`: a series whose step and time it shares
  // (hard links), which appends them.
  Series& series(const std::string& path, int64_t file_type, const std::vector<unsigned long long>& frame_dims,
                 const std::string& unit, bool compress, Series* clock = nullptr);
  void append(Series& s, int64_t step, double time, const void* data, int64_t mem_type);
  void write_static(const RunConfig& cfg, const SystemState& st, const Topology& topology);
  // The file: continued (a restart, with the run's file there) or created; `fapl` is its hid_t
  // of file access.
  void continue_file(int64_t fapl, const SystemState& initial, int64_t restart_step);
  void create_file(int64_t fapl, const SystemState& initial, const Topology& topology);
  void open_existing(const SystemState& st, int64_t restart_step);
  // The series at `path` of a file a restart continues, without its frames after restart_step.
  void truncate_series(const std::string& path, int64_t restart_step);
  // What write_frame() writes: the state (its positions, images, box and velocities), the
  // observables, the forces where a force frame is due, and the run's first step (the first
  // frame of a new file).
  struct FrameParts {
    const SystemState& state;
    const Observables& observables;
    double time;
    const std::vector<Vec3d>& forces;
    int64_t first_step;
  };
  // A frame as observe() hands it over to the writer's thread: the parts the file takes, copied.
  struct Pending {
    Pending(const FrameParts& f, bool velocities);
    Pending(const Pending&) = delete;  // `view` refers to its own members
    Pending& operator=(const Pending&) = delete;
    SystemState state;
    Observables observables;
    std::vector<Vec3d> forces;
    FrameParts view;  // of the copies above
  };
  bool due(int64_t step, int64_t every, int64_t first_step) const;
  void write_frame(const FrameParts& frame, bool final_frame);
  // Writes the frame handed over, if any (the library lock held). A failure is kept for the
  // next observe(), flush() or finish().
  void write_pending_locked();
  void writer_loop();
  // The first write or timed flush that failed and was not reported yet ("" if none), cleared.
  std::string take_unreported_error();
  std::string timed_flush_error(const std::string& why) const;
  void stop_writer();  // without the library lock: the thread takes it to write what is left
  void maybe_flush();
  void flush_locked();
  void flush_series_in_order();
  void fail_locked();
  void close_locked();
  bool timed_flush_locked();
  template <typename F>
  void guarded(const char* what, F&& f);

  std::string path_;
  const RunConfig& cfg_;
  double dof_;
  int64_t every_, velocities_every_, forces_every_, observables_every_;
  int compression_;
  double flush_seconds_;
  bool appending_;
  std::atomic<bool> failed_{false};
  size_t n_ = 0;
  int64_t frames_dropped_ = 0;
  int64_t file_ = -1;  // the hid_t of the open file
  std::map<std::string, std::unique_ptr<Series>> series_;
  std::chrono::steady_clock::time_point last_flush_;
  // The flush timer: flushes, under the library lock, once the oldest unflushed frame is
  // flush_seconds old; a failed timed flush is reported by the next observe(), flush() or finish().
  TimedFlusher flusher_;
  size_t bytes_since_flush_ = 0;
  size_t reserve_bytes_ = 0;
  // The frame handed over and not yet written (one at a time), and the writer's thread.
  std::mutex pending_mutex_;  // taken after the library lock, never before
  std::condition_variable pending_changed_;
  std::unique_ptr<Pending> pending_;
  bool writing_ = false;  // the frame taken from pending_ is being written
  bool stop_writing_ = false;
  std::string write_error_;  // the first failed write's message, until reported
  std::thread writer_;
  std::string length_unit_, time_unit_, velocity_unit_, force_unit_, energy_unit_, temperature_unit_, pressure_unit_;
};

}  // namespace pairmd
