// The GSD trajectory writer (output.gsd): HOOMD-blue's file format, written with GSD's reference
// C library, so that the gsd Python package (Debian's 2.7 and PyPI's 5.x), HOOMD, OVITO and
// MDAnalysis open it. Layout and guarantees: docs/output.md.
//
// Frames follow the HOOMD schema (version 1.4): the first frame of the file holds everything
// (types, masses, charges, diameters, bonds and their types, the box, positions, images,
// velocities if asked for); later frames hold what changes (step, box, positions, images,
// velocities), and readers take the rest from frame 0. Values are float32 where the schema asks
// for it (positions, velocities, masses, charges); positions are shifted into the schema's box
// centred on the origin. Thermodynamic observables go into log/ chunks of every frame.
//
// The same guarantees as the H5MD trajectory: the file is created exclusively (never replacing
// one), a restart continues it after dropping the frames beyond the restart step, and frames are
// flushed on the clock (a timer thread flushes once the oldest unflushed frame is
// flush_seconds old; 0: after every frame) and before every checkpoint. GSD writes a frame's
// data before the index that refers to it (each gsd_flush syncs the data, then writes and
// syncs the index), so a killed run leaves a file that opens and holds every frame up to its
// last flush.
#pragma once

#include <gsd/gsd.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/run_observer.h"
#include "io/timed_flusher.h"

namespace pairmd {

class GsdWriter final : public RunObserver {
 public:
  // Creates `path` (which must not exist), or with `restart_step` >= 0 continues the existing
  // file: checks that it holds the same system (particle count, types, the run's id) and drops
  // every frame after `restart_step` (rewriting the file through PATH.tmp.PID and a rename when
  // there are any). `dof` is for the temperature. Throws std::runtime_error naming the file.
  GsdWriter(const std::string& path, const RunConfig& cfg, const SystemState& initial, const Topology& topology,
            double dof, int64_t restart_step = -1);
  ~GsdWriter() override;
  GsdWriter(const GsdWriter&) = delete;
  GsdWriter& operator=(const GsdWriter&) = delete;

  int64_t next_step(int64_t step) const override { return next_multiple(step, every_); }
  void observe(const RunContext& ctx, const Frame& frame) override;
  // Writes the final frame of a completed run and closes the file. After a write error the
  // file stays as its last flush left it.
  void finish(const RunContext& ctx, const Frame& frame) override;

  // Makes every frame written so far durable (gsd_flush: data, then index, each synced).
  void flush();
  const std::string& path() const { return path_; }
  int64_t frames() const;  // frames in the file, flushed or not
  int64_t frames_dropped() const { return frames_dropped_; }

 private:
  void open_existing(const SystemState& st, int64_t restart_step);
  void write_frame(const RunContext& ctx, const Frame& frame);
  void write_static(const SystemState& st);
  void write_bonded_groups();
  void chunk(const char* name, gsd_type type, uint64_t n, uint32_t m, const void* data);
  void align_a_moving_index();
  void flush_locked();
  void fail_locked();
  void close_locked();
  bool timed_flush_locked();
  template <typename F>
  void guarded(const char* what, F&& f);

  std::string path_;
  const RunConfig& cfg_;
  const Topology& topology_;
  double dof_;
  int64_t every_;
  bool velocities_;
  double flush_seconds_;
  bool appending_ = false;
  gsd_handle handle_{};
  bool open_ = false;
  bool failed_ = false;
  uint64_t frames_ = 0;  // frames in the file (ended with gsd_end_frame)
  int64_t last_step_ = INT64_MIN;
  int64_t frames_dropped_ = 0;
  int64_t flushed_size_ = -1;  // file size at the last flush: what a failure cuts back to
  uint64_t frame_bytes_ = 0;   // about what one frame adds to the file
  uint64_t static_bytes_ = 0;  // ... and what the first frame adds besides (types, masses, bonds)
  uint64_t frames_left_ = 0;   // at most as many frames as the run still writes
  uint64_t bytes_since_flush_ = 0;
  uint64_t reserve_ = 0;     // disk blocks reserved past the end at the last flush
  std::vector<float> buf3_;  // position/velocity staging (float32)
  std::vector<int32_t> image_;

  // `mutex_` guards the file; the flush timer takes it to flush (and its own lock after it).
  mutable std::mutex mutex_;
  TimedFlusher flusher_;
};

}  // namespace pairmd
