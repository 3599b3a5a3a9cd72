// The scheduling core as both replays set it up (internal to tephra_simulate): a Scheduler for `conf` with
// the GPU resource interned and the one queue every replayed pod waits in.
#pragma once

#include <memory>

#include "tephra/core/status.h"
#include "tephra/sched/scheduler.h"

namespace tephra::simulate::internal {

struct SimCore {
  std::unique_ptr<sched::Scheduler> scheduler;
  int gpu = 0;  // the resource index of nvidia.com/gpu
};

inline core::StatusOr<SimCore> NewSimCore(const sched::SchedulerConf& conf) {
  auto created = sched::Scheduler::Create(conf);
  if (!created.ok()) return created.status();
  SimCore c;
  c.scheduler = std::move(created).value();
  sched::ClusterState& st = c.scheduler->state();
  c.gpu = *st.resources().Intern("nvidia.com/gpu");
  sched::QueueInfo q;
  q.name = "default";
  st.UpsertQueue(q);
  return c;
}

}  // namespace tephra::simulate::internal
