#include "tephra/scheduler/evictor.h"

#include <algorithm>

#include "tephra/api/core_v1.h"

namespace tephra::scheduler {

std::string EvictMessage(const sched::EvictDecision& d) {
  std::string m = "Pod " + d.ns + "/" + d.name + " is evicted by " + d.reason;
  if (!d.preemptor.empty()) m += " for " + d.preemptor;
  if (!d.node.empty()) m += " on node " + d.node;
  return m;
}

Evictor::Evictor(kube::ClientPtr client, EventSink events, std::chrono::seconds remember)
    : client_(std::move(client)), events_(std::move(events)), remember_(remember) {}

Evictor::~Evictor() { Stop(); }

void Evictor::Forget(std::chrono::steady_clock::time_point now) {
  for (auto it = deleted_.begin(); it != deleted_.end();) {
    if (now - it->second > remember_) it = deleted_.erase(it);
    else ++it;
  }
}

size_t Evictor::remembered() const {
  core::MutexLock l(mu_);
  return deleted_.size();
}

EvictOutcome Evictor::Execute(const std::vector<sched::EvictDecision>& decisions,
                              std::chrono::steady_clock::time_point now) {
  EvictOutcome out;
  {
    core::MutexLock l(mu_);
    Forget(now);
  }
  for (const auto& d : decisions) ExecuteOne(d, now, &out);
  return out;
}

void Evictor::ExecuteOne(const sched::EvictDecision& d, std::chrono::steady_clock::time_point now, EvictOutcome* out) {
  {
    core::MutexLock l(mu_);
    Forget(now);
    // Claimed before the call, so two workers never delete (and report) the same victim.
    if (!deleted_.emplace(d.task_uid, now).second) {
      ++out->duplicates;
      return;
    }
  }
  kube::DeleteOptions opts;
  opts.precondition_uid = d.task_uid;  // never a re-created pod that reuses the name
  core::Status s = client_->Delete(api::Pod::Resource(), d.ns, d.name, opts);
  // NotFound: already gone. Conflict on the UID precondition: the pod we meant is gone too.
  if (!s.ok() && !core::IsNotFound(s) && !core::IsConflict(s)) {
    core::MutexLock l(mu_);
    deleted_.erase(d.task_uid);
    out->failed_uids.push_back(d.task_uid);
    return;
  }
  ++out->deleted;
  if (!s.ok()) return;  // nothing was evicted by us: no Event
  const std::string msg = EvictMessage(d);
  if (events_) {
    events_({"Pod", d.ns, d.name, d.task_uid, "Warning", "Evict", msg});
    if (!d.job.empty()) {
      auto slash = d.job.find('/');
      if (slash != std::string::npos)
        events_({"PodGroup", d.job.substr(0, slash), d.job.substr(slash + 1), "", "Warning", "Evict", msg});
    }
  }
}

void Evictor::Start(int workers, std::function<void(const EvictOutcome&)> on_done) {
  on_done_ = std::move(on_done);
  core::MutexLock l(mu_);
  for (int i = 0; i < std::max(1, workers); ++i) threads_.emplace_back([this] { Worker(); });
}

void Evictor::Submit(std::vector<sched::EvictDecision> decisions) {
  {
    core::MutexLock l(mu_);
    if (stopping_) return;
    for (auto& d : decisions) queue_.push_back(std::move(d));
  }
  cv_.NotifyAll();
}

void Evictor::Worker() {
  while (true) {
    sched::EvictDecision d;
    {
      core::MutexLock l(mu_);
      while (!stopping_ && queue_.empty()) cv_.Wait(l);
      if (stopping_) return;
      d = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
    }
    EvictOutcome out;
    ExecuteOne(d, std::chrono::steady_clock::now(), &out);
    if (on_done_) on_done_(out);
    {
      core::MutexLock l(mu_);
      --in_flight_;
    }
    idle_cv_.NotifyAll();
  }
}

bool Evictor::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  core::MutexLock l(mu_);
  while (!(queue_.empty() && in_flight_ == 0)) {
    if (idle_cv_.WaitUntil(l, deadline) == std::cv_status::timeout) return queue_.empty() && in_flight_ == 0;
  }
  return true;
}

void Evictor::Stop() {
  std::vector<std::thread> ts;
  {
    core::MutexLock l(mu_);
    stopping_ = true;
    queue_.clear();
    ts.swap(threads_);
  }
  cv_.NotifyAll();
  idle_cv_.NotifyAll();
  for (auto& t : ts) t.join();
}

}  // namespace tephra::scheduler
