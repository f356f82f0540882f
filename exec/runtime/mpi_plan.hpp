// How the MPI mode carries a Plan's dependencies (no MPI, no CUDA here: tested on the CPU). Each
// process issues only its rank's steps; an event whose waiting step runs on the recording rank stays
// a CUDA event, and one waited on by another rank becomes an epoch flag that the producer stores into
// every consuming rank's flag array (index = event id) and the consumer spins on locally.
#pragma once

#include <cstdint>
#include <vector>

#include "lower/general.hpp"

namespace cclab::exec {

using lower::LowerOptions;
using lower::Plan;
using lower::PlanStep;
using lower::StepKind;

struct MpiEventRoles {
  std::vector<int> producer_rank;                  // per event: the rank whose step records it
  std::vector<int> producer_op;                    // per event: that step's (first) schedule op
  std::vector<char> local_wait;                    // per event: a step of the producer's rank waits on it
  std::vector<std::vector<int>> remote_consumers;  // per event: the other ranks with a step waiting on it
  std::vector<int64_t> flag_waits;                 // per rank: waits of its steps on other ranks' events
};

MpiEventRoles mpi_event_roles(const Plan& plan);

}  // namespace cclab::exec
