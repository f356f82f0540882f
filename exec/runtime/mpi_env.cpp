#include "exec/runtime/mpi_env.hpp"

#include <cstdlib>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace cclab::exec {

namespace {

// (size variable, rank variable) of each launcher, in the order they are tried.
constexpr const char* kLaunchers[][2] = {
    {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},  // Open MPI's mpirun / orterun / prterun
    {"PMI_SIZE", "PMI_RANK"},                          // MPICH and Intel MPI (Hydra), srun --mpi=pmi2
    {"MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"},    // MVAPICH2's mpirun_rsh
};

}  // namespace

MpiLaunch mpi_launch_from_env(const std::function<const char*(const char*)>& getenv) {
  MpiLaunch l;
  for (const auto& v : kLaunchers) {
    const char* size = getenv(v[0]);
    if (!size || !*size) continue;
    l.source = v[0];
    l.world_size = int(parse_int(v[0], size, 1, 1 << 20));
    if (const char* rank = getenv(v[1]); rank && *rank) l.world_rank = int(parse_int(v[1], rank, 0, l.world_size - 1));
    break;
  }
  return l;
}

MpiLaunch mpi_launch_from_env() {
  return mpi_launch_from_env([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

bool mpi_built() {
#if CCLAB_HAVE_MPI
  return true;
#else
  return false;
#endif
}

bool mpi_mode(const RunOptions& o, const MpiLaunch& launch) { return o.mpi || launch.world_size > 1; }

std::string mpi_option_refusal(const RunOptions& o, const MpiLaunch& launch) {
  if (o.share_gpus)
    return "--share-gpus runs several ranks in one process; under mpirun each process drives one GPU (drop "
           "--share-gpus, or run without mpirun)";
  if (o.nranks > 0 && launch.world_size > 0 && o.nranks != launch.world_size)
    return "-g " + std::to_string(o.nranks) + " does not match the " + std::to_string(launch.world_size) +
           " processes mpirun started (" + launch.source + "): under mpirun the ranks are the processes";
  return {};
}

#if !CCLAB_HAVE_MPI
int run_sweep_mpi(const RunOptions&, std::ostream&) {
  const MpiLaunch l = mpi_launch_from_env();
  throw_env("this process was started by an MPI launcher" +
            (l.world_size > 0 ? " (" + l.source + "=" + std::to_string(l.world_size) + ")" : std::string()) +
            " or with --mpi, but cclab was built without MPI: install libopenmpi-dev (scripts/setup.sh) and "
            "rebuild, or run `cclab run` without mpirun");
}
#endif

}  // namespace cclab::exec
