// MPI mode of `cclab run` (one process per GPU, started by mpirun): how a process learns it was
// started by a launcher, what the mode refuses, and the sweep entry point. This header needs no MPI:
// a binary built without MPI still recognises mpirun's environment and refuses with one line.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

#include "exec/runtime/runner.hpp"

namespace cclab::exec {

// What the launcher's environment says about this process (before MPI_Init).
struct MpiLaunch {
  int world_size = 0;   // 0: not started by a known launcher
  int world_rank = -1;  // -1: unknown
  std::string source;   // the variable that told ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", ...)
};

// Reads the launchers' variables: Open MPI (OMPI_COMM_WORLD_SIZE/RANK), MPICH and Intel MPI's Hydra
// (PMI_SIZE/RANK), MVAPICH2 (MV2_COMM_WORLD_SIZE/RANK). `getenv` is injectable for tests. Throws an
// input error naming the variable when its value is not a positive integer.
MpiLaunch mpi_launch_from_env(const std::function<const char*(const char*)>& getenv);
MpiLaunch mpi_launch_from_env();

// Whether this binary was built with MPI (CMake found it: CCLAB_HAVE_MPI).
bool mpi_built();

// True when `cclab run` must run in MPI mode: --mpi given, or started by a launcher with more than
// one process.
bool mpi_mode(const RunOptions& o, const MpiLaunch& launch);

// Options the MPI mode cannot honour, as one line (empty when none): --share-gpus, -g other than
// the number of processes. Checked before MPI_Init.
std::string mpi_option_refusal(const RunOptions& o, const MpiLaunch& launch);

// The sweep of run_sweep() with one process per GPU: rank 0 prints the table and writes the CSV.
// Without MPI in the build: throws an environment error (exit 2) saying so.
int run_sweep_mpi(const RunOptions& o, std::ostream& out);

}  // namespace cclab::exec
