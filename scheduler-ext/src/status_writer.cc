#include "tephra/api/core_v1.h"
#include "tephra/scheduler/status_writer.h"

#include <cstdio>

#include "tephra/kube/log.h"
#include "tephra/scheduler/convert.h"

namespace tephra::scheduler {

using api::json;

core::Status WritePodGroupStatus(kube::Client& client, const sched::PodGroupStatusUpdate& u,
                                 std::shared_ptr<const api::PodGroup> cached, const std::string& now,
                                 StatusWriterStats* stats) {
  api::PodGroup pg;
  bool have = false;
  // A cached object of another uid is an older or newer PodGroup of the same name: read the current one.
  if (cached && (u.uid.empty() || cached->metadata.uid == u.uid)) {
    pg = *cached;
    have = true;
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (!have) {
      auto got = kube::GetAs<api::PodGroup>(client, u.ns, u.name);
      if (!got.ok()) return got.status();
      pg = std::move(*got);
      if (!u.uid.empty() && pg.metadata.uid != u.uid) {
        // The PodGroup this status was computed for is gone; its successor gets its own status from the
        // next cycle. Writing this one there is how a restarted job's PodGroup used to flip back.
        if (stats) stats->podgroup_superseded++;
        return core::Status(core::StatusCode::kNotFound, "podgroup " + u.job + " was re-created (uid " +
                                                             pg.metadata.uid + ", status computed for " + u.uid + ")");
      }
    }
    if (!ApplyPodGroupStatus(u, now, &pg.status)) {
      if (stats) stats->podgroup_unchanged++;
      return core::Status::OK();
    }
    // The body carries metadata.uid and resourceVersion: the API server answers 409 if the object was
    // changed or replaced meanwhile, and the loop re-reads it.
    auto r = client.Update(api::PodGroup::Resource(), u.ns, api::ToJson(pg));
    if (r.ok()) {
      if (stats) stats->podgroup_writes++;
      return core::Status::OK();
    }
    if (!core::IsConflict(r.status())) return r.status();
    if (stats) stats->podgroup_conflicts++;
    have = false;  // re-read and redo
  }
  return core::Status(core::StatusCode::kAborted, "podgroup " + u.job + ": status update kept conflicting");
}

StatusWriter::StatusWriter(kube::ClientPtr client, PodGroupLookup lookup, const core::Clock* clock,
                           std::string component, kube::EventRecorder* recorder)
    : client_(std::move(client)), lookup_(std::move(lookup)), clock_(clock), component_(std::move(component)) {
  if (!recorder) {
    kube::EventRecorderOptions ro;
    ro.component = component_;
    ro.clock = clock_;
    own_recorder_ = std::make_unique<kube::EventRecorder>(client_, std::move(ro));
    recorder = own_recorder_.get();
  }
  recorder_ = recorder;
  thread_ = std::thread([this] { Run(); });
}

StatusWriter::~StatusWriter() { Stop(); }

void StatusWriter::PodGroup(sched::PodGroupStatusUpdate u) {
  {
    std::lock_guard l(mu_);
    std::string key = u.job;
    pg_retry_.erase(key);  // superseded: the newest desired status is the only one worth writing
    pg_[key] = std::move(u);
  }
  cv_.notify_one();
}

void StatusWriter::Queue(const std::string& name, api::ResourceList allocated, std::vector<std::string> cleared) {
  {
    std::lock_guard l(mu_);
    queue_retry_.erase(name);
    queues_[name] = {std::move(allocated), std::move(cleared)};
  }
  cv_.notify_one();
}

std::chrono::steady_clock::duration StatusWriter::RetryDelay(int attempt) {
  // 200 ms, 400 ms, ... capped at 10 s: an API server that is down for a minute is retried a few times a
  // minute, and the scheduler's periodic status resync covers anything given up on.
  auto d = std::chrono::milliseconds(200) * (1LL << std::min(attempt, 6));
  return std::min<std::chrono::steady_clock::duration>(d, std::chrono::seconds(10));
}

template <typename Map, typename RetryMap>
void StatusWriter::TakeDueRetries(Map* batch, RetryMap* retry, std::chrono::steady_clock::time_point now) {
  for (auto it = retry->begin(); it != retry->end();) {
    if (it->second.not_before <= now && !batch->count(it->first)) {
      batch->emplace(it->first, std::move(it->second.value));
      attempts_[it->first] = it->second.attempt;
      it = retry->erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<std::chrono::steady_clock::time_point> StatusWriter::NextRetry() const {
  std::optional<std::chrono::steady_clock::time_point> t;
  for (const auto& [k, r] : pg_retry_)
    if (!t || r.not_before < *t) t = r.not_before;
  for (const auto& [k, r] : queue_retry_)
    if (!t || r.not_before < *t) t = r.not_before;
  return t;
}

void StatusWriter::Event(EventSpec e) {
  kube::ObjectReference ref;
  ref.kind = e.kind;
  ref.api_version = e.kind == "Pod" ? "v1" : "scheduling.volcano.sh/v1beta1";
  ref.namespace_ = e.ns;
  ref.name = e.name;
  ref.uid = e.uid;
  recorder_->Event(ref, e.type == "Warning" ? kube::EventType::kWarning : kube::EventType::kNormal, std::move(e.reason),
                   std::move(e.message));
}

api::json PodUnschedulablePatch(const PodConditionSpec& c, const std::string& now_rfc3339) {
  return {{"status",
           {{"conditions",
             json::array({{{"type", "PodScheduled"},
                           {"status", "False"},
                           {"reason", c.reason},
                           {"message", c.message},
                           {"lastProbeTime", nullptr},
                           {"lastTransitionTime", now_rfc3339}}})}}}};
}

void StatusWriter::PodUnschedulable(PodConditionSpec c) {
  {
    std::lock_guard l(mu_);
    std::string key = c.uid.empty() ? c.ns + "/" + c.name : c.uid;
    pods_[key] = std::move(c);
  }
  cv_.notify_one();
}

void StatusWriter::Stop() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (own_recorder_) own_recorder_->Shutdown();
}

bool StatusWriter::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock l(mu_);
  return idle_cv_.wait_until(l, deadline, [&] {
    return !busy_ && pg_.empty() && queues_.empty() && pods_.empty() && pg_retry_.empty() && queue_retry_.empty();
  }) && recorder_->Flush(std::chrono::duration_cast<std::chrono::milliseconds>(
            std::max(std::chrono::steady_clock::duration::zero(), deadline - std::chrono::steady_clock::now())));
}

void StatusWriter::Run() {
  for (;;) {
    std::map<std::string, sched::PodGroupStatusUpdate> pgs;
    std::map<std::string, QueueAllocation> queues;
    std::map<std::string, PodConditionSpec> pods;
    {
      std::unique_lock l(mu_);
      busy_ = false;
      idle_cv_.notify_all();
      auto ready = [&] {
        if (stopping_ || !pg_.empty() || !queues_.empty() || !pods_.empty()) return true;
        auto next = NextRetry();
        return next && *next <= std::chrono::steady_clock::now();
      };
      while (!ready()) {
        auto next = NextRetry();
        if (next) cv_.wait_until(l, *next);
        else cv_.wait(l);
      }
      if (stopping_) return;
      pgs.swap(pg_);
      queues.swap(queues_);
      pods.swap(pods_);
      attempts_.clear();
      const auto now = std::chrono::steady_clock::now();
      TakeDueRetries(&pgs, &pg_retry_, now);
      TakeDueRetries(&queues, &queue_retry_, now);
      busy_ = true;
    }
    const core::Clock::WallTime wall = clock_->WallNow();
    const std::string now = core::FormatRfc3339(wall);
    // A failed write (API server down, timeout, 5xx, a conflict that kept repeating) is kept and retried
    // with backoff unless a newer status for the same object arrives first; the scheduler's memory of what
    // it emitted assumes the write eventually lands.
    auto retry_later = [&](auto* retry, const auto& queued, const std::string& key, auto value) {
      auto a = attempts_.find(key);
      int attempt = a == attempts_.end() ? 0 : a->second + 1;
      std::lock_guard l(mu_);
      if (stopping_) return;
      if (queued.count(key) > 0) return;  // a newer desired value queued while we were writing wins
      (*retry)[key] = {std::move(value), attempt, std::chrono::steady_clock::now() + RetryDelay(attempt)};
    };
    for (auto& [key, u] : pgs) {
      core::Status s = WritePodGroupStatus(*client_, u, lookup_ ? lookup_(u.ns, u.name) : nullptr, now, &stats_);
      if (!s.ok() && !core::IsNotFound(s)) {
        stats_.podgroup_errors++;
        kube::log::Warn("podgroup status write failed; will retry").Kv("podgroup", key).Kv("error", s);
        retry_later(&pg_retry_, pg_, key, std::move(u));
      }
    }
    for (auto& [name, alloc] : queues) {
      json allocated = json::object();
      for (const auto& res : alloc.cleared) allocated[res] = nullptr;
      for (const auto& [res, q] : alloc.allocated) allocated[res] = q.ToString();
      json patch = {{"status", {{"allocated", allocated}}}};
      auto r = client_->Patch(api::Queue::Resource(), "", name, kube::PatchType::kMerge, patch, "status");
      if (r.ok()) {
        stats_.queue_writes++;
      } else if (!core::IsNotFound(r.status())) {
        stats_.queue_errors++;
        kube::log::Warn("queue status write failed; will retry").Kv("queue", name).Kv("error", r.status());
        retry_later(&queue_retry_, queues_, name, std::move(alloc));
      }
    }
    for (const auto& [key, c] : pods) {
      auto r = client_->Patch(api::Pod::Resource(), c.ns, c.name, kube::PatchType::kStrategicMerge,
                              PodUnschedulablePatch(c, now), "status");
      if (r.ok()) {
        stats_.pod_condition_writes++;
      } else if (!core::IsNotFound(r.status())) {  // a pod deleted meanwhile needs nothing
        stats_.pod_condition_errors++;
        kube::log::Warn("pod condition write failed").Kv("pod", c.ns + "/" + c.name).Kv("error", r.status());
      }
    }
  }
}

}  // namespace tephra::scheduler
