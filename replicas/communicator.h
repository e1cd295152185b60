// The ranks of a replica ensemble and the little they say to each other: every collective of
// pairmd carries a few scalars per rank (a status and a potential energy at each exchange), never
// coordinates. Over MPI when pairmd was built with it and started by an MPI launcher (mpirun);
// otherwise a world of one rank, and pairmd runs as it always has.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace pairmd {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // This rank's index among the ranks of its node (which GPU it takes).
  virtual int local_rank() const = 0;
  // What the ranks are: "4 MPI ranks (Open MPI v4.1.4)", or why there is no MPI.
  virtual std::string describe() const = 0;
  // Every rank's `values` (the same count on each), one after another in rank order.
  virtual std::vector<double> allgather(const std::vector<double>& values) = 0;
  // Ends every rank of the job at once (a rank that cannot take part in collectives any more).
  [[noreturn]] virtual void abort(int code) = 0;
};

// True when pairmd was built with MPI.
bool mpi_built();
// True when this process was started by an MPI launcher (its environment says so).
bool mpi_launched();

// True when MPI was started and may be called from any thread of this process, one at a time
// (MPI_THREAD_SERIALIZED): what a rank that runs several replicas as threads needs.
bool mpi_serves_threads();

// The world of this process: initialises MPI when it was built with MPI and started by an MPI
// launcher, else a world of one. Call once, at the start of main; world() gives it afterwards.
void init_world(int* argc, char*** argv);
Communicator& world();
// Ends MPI (where it was started); call once, before main returns.
void finalize_world();

}  // namespace pairmd
