#include "replicas/communicator.h"

#include <cstdlib>
#include <stdexcept>

#ifdef PAIRMD_HAVE_MPI
#include <mpi.h>
#endif

namespace pairmd {

namespace {

// A world of one rank.
class Single final : public Communicator {
 public:
  explicit Single(std::string why) : why_(std::move(why)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string describe() const override { return why_; }
  std::vector<double> allgather(const std::vector<double>& values) override { return values; }
  [[noreturn]] void abort(int code) override { std::exit(code); }

 private:
  std::string why_;
};

#ifdef PAIRMD_HAVE_MPI
class Mpi final : public Communicator {
 public:
  Mpi() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_free(&node);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<size_t>(len));
    const size_t comma = v.find(',');
    describe_ = std::to_string(size_) + " MPI ranks (" + (comma == std::string::npos ? v : v.substr(0, comma)) + ")";
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string describe() const override { return describe_; }
  std::vector<double> allgather(const std::vector<double>& values) override {
    std::vector<double> all(values.size() * static_cast<size_t>(size_));
    const int n = static_cast<int>(values.size());
    if (MPI_Allgather(values.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, MPI_COMM_WORLD) != MPI_SUCCESS)
      throw std::runtime_error("MPI_Allgather failed");
    return all;
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);
  }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::string describe_;
};
#endif

std::unique_ptr<Communicator>& the_world() {
  static std::unique_ptr<Communicator> w;
  return w;
}
bool g_mpi_started = false;
bool g_mpi_threads = false;

}  // namespace

bool mpi_built() {
#ifdef PAIRMD_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool mpi_launched() {
  // Open MPI's mpirun, and the PMI/PMIx of MPICH's hydra, Slurm's srun and others.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

void init_world(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
#ifdef PAIRMD_HAVE_MPI
  if (mpi_launched()) {
    // Ranks that run several replicas call MPI from whichever of their threads comes last to a
    // meeting, one thread at a time (replicas/thread_communicator.h).
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    g_mpi_started = true;
    g_mpi_threads = provided >= MPI_THREAD_SERIALIZED;
    the_world() = std::make_unique<Mpi>();
    return;
  }
  the_world() = std::make_unique<Single>("one process (not started by mpirun)");
#else
  the_world() = std::make_unique<Single>(
      mpi_launched() ? "one process: started by an MPI launcher, but this pairmd was built without MPI"
                     : "one process (pairmd was built without MPI)");
#endif
}

bool mpi_serves_threads() { return g_mpi_threads; }

Communicator& world() {
  if (!the_world()) the_world() = std::make_unique<Single>("one process");
  return *the_world();
}

void finalize_world() {
#ifdef PAIRMD_HAVE_MPI
  if (g_mpi_started) MPI_Finalize();
  g_mpi_started = false;
#endif
}

}  // namespace pairmd
