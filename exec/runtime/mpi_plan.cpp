#include "exec/runtime/mpi_plan.hpp"

#include <algorithm>

namespace cclab::exec {

MpiEventRoles mpi_event_roles(const Plan& plan) {
  const auto nev = size_t(plan.num_events());
  auto stream_rank = [&](int32_t stream) { return plan.streams[size_t(stream)].rank; };
  MpiEventRoles r;
  r.producer_rank.assign(nev, -1);
  r.producer_op.assign(nev, -1);
  r.local_wait.assign(nev, 0);
  r.remote_consumers.assign(nev, {});
  r.flag_waits.assign(size_t(plan.nranks), 0);
  for (size_t e = 0; e < nev; ++e) r.producer_rank[e] = stream_rank(plan.event_stream[e]);
  for (const auto& st : plan.steps) {
    if (st.record >= 0) r.producer_op[size_t(st.record)] = int(st.op);
    const int consumer = stream_rank(st.stream);
    for (int32_t e : plan.waits(st)) {
      const auto ev = size_t(e);
      if (consumer == r.producer_rank[ev]) {
        r.local_wait[ev] = 1;
        continue;
      }
      ++r.flag_waits[size_t(consumer)];
      auto& rc = r.remote_consumers[ev];
      if (std::find(rc.begin(), rc.end(), consumer) == rc.end()) rc.push_back(consumer);
    }
  }
  return r;
}

}  // namespace cclab::exec
