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
                           std::string component, kube::EventRecorder* recorder, int workers,
                           std::chrono::steady_clock::duration counter_interval)
    : client_(std::move(client)),
      lookup_(std::move(lookup)),
      clock_(clock),
      component_(std::move(component)),
      counter_interval_(counter_interval) {
  if (!recorder) {
    kube::EventRecorderOptions ro;
    ro.component = component_;
    ro.clock = clock_;
    own_recorder_ = std::make_unique<kube::EventRecorder>(client_, std::move(ro));
    recorder = own_recorder_.get();
  }
  recorder_ = recorder;
  for (int i = 0; i < std::max(1, workers); ++i) threads_.emplace_back([this] { Run(); });
}

StatusWriter::~StatusWriter() { Stop(); }

std::string StatusWriter::FlightKey(Kind kind, const std::string& key) {
  switch (kind) {
    case Kind::kPodGroup: return "pg/" + key;
    case Kind::kQueue: return "queue/" + key;
    case Kind::kPod: return "pod/" + key;
  }
  return key;
}

void StatusWriter::PodGroup(sched::PodGroupStatusUpdate u) {
  {
    core::MutexLock l(mu_);
    std::string key = u.job;
    attempts_.erase(FlightKey(Kind::kPodGroup, key));
    const auto now = std::chrono::steady_clock::now();
    if (auto w = pg_written_.find(key); w != pg_written_.end() && now < w->second.at + counter_interval_ &&
                                        w->second.uid == u.uid && w->second.phase == u.phase && w->second.conditions == u.conditions) {
      // Only counters moved since the last status sent: wait out the interval. The newest status replaces any
      // queued or held one (each carries the whole desired status).
      stats_.podgroup_held++;
      pg_.erase(key);
      pg_retry_[key] = {std::move(u), 0, w->second.at + counter_interval_};
    } else {
      pg_retry_.erase(key);  // superseded: the newest desired status is the only one worth writing
      pg_[key] = std::move(u);
    }
  }
  cv_.NotifyOne();  // also for a hold: a worker may be waiting for a later retry, or for no retry at all
}

void StatusWriter::RecordWritten(const std::string& key, const sched::PodGroupStatusUpdate& u) {
  if (counter_interval_ <= std::chrono::steady_clock::duration::zero()) return;
  const auto now = std::chrono::steady_clock::now();
  while (!pg_written_order_.empty() && pg_written_order_.front().first + counter_interval_ <= now) {
    auto it = pg_written_.find(pg_written_order_.front().second);
    if (it != pg_written_.end() && it->second.at == pg_written_order_.front().first) pg_written_.erase(it);
    pg_written_order_.pop_front();
  }
  pg_written_[key] = {u.uid, u.phase, u.conditions, now};
  pg_written_order_.emplace_back(now, key);
}

void StatusWriter::Queue(const std::string& name, api::ResourceList allocated, std::vector<std::string> cleared) {
  {
    core::MutexLock l(mu_);
    attempts_.erase(FlightKey(Kind::kQueue, name));
    const auto now = std::chrono::steady_clock::now();
    auto w = queue_written_.find(name);
    if (w != queue_written_.end() && now >= w->second + counter_interval_) {
      queue_written_.erase(w);
      w = queue_written_.end();
    }
    if (w != queue_written_.end()) {
      // Written less than an interval ago: the allocation moves with every bind of a burst; the newest
      // waits for the interval to pass (newer ones replacing it), as a PodGroup's counters do.
      stats_.queue_held++;
      queues_.erase(name);
      queue_retry_[name] = {QueueAllocation{std::move(allocated), std::move(cleared)}, 0, w->second + counter_interval_};
    } else {
      queue_retry_.erase(name);
      queues_[name] = {std::move(allocated), std::move(cleared)};
    }
  }
  cv_.NotifyOne();
}

std::chrono::steady_clock::duration StatusWriter::RetryDelay(int attempt) {
  // 200 ms, 400 ms, ... capped at 10 s: an API server that is down for a minute is retried a few times a
  // minute, and the scheduler's periodic status resync covers anything given up on.
  auto d = std::chrono::milliseconds(200) * (1LL << std::min(attempt, 6));
  return std::min<std::chrono::steady_clock::duration>(d, std::chrono::seconds(10));
}

template <typename Map, typename RetryMap>
void StatusWriter::TakeDueRetries(Map* pending, RetryMap* retry, Kind kind, std::chrono::steady_clock::time_point now) {
  for (auto it = retry->begin(); it != retry->end();) {
    if (it->second.not_before <= now && !pending->count(it->first)) {
      attempts_[FlightKey(kind, it->first)] = it->second.attempt;
      pending->emplace(it->first, std::move(it->second.value));
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

template <typename Map>
typename Map::iterator StatusWriter::FirstIdle(Map& m, Kind kind) {
  // At most one queued key per worker is skipped (a key queues again only while it is being written), so
  // this walks at most `workers` entries.
  auto it = m.begin();
  while (it != m.end() && in_flight_.count(FlightKey(kind, it->first))) ++it;
  return it;
}

bool StatusWriter::HasIdleWork() {
  return FirstIdle(pg_, Kind::kPodGroup) != pg_.end() || FirstIdle(queues_, Kind::kQueue) != queues_.end() ||
         FirstIdle(pods_, Kind::kPod) != pods_.end();
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
    core::MutexLock l(mu_);
    std::string key = c.uid.empty() ? c.ns + "/" + c.name : c.uid;
    pods_[key] = std::move(c);
  }
  cv_.NotifyOne();
}

void StatusWriter::Stop() {
  {
    core::MutexLock l(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  if (own_recorder_) own_recorder_->Shutdown();
}

bool StatusWriter::Idle() const {
  return in_flight_.empty() && pg_.empty() && queues_.empty() && pods_.empty() && pg_retry_.empty() &&
         queue_retry_.empty();
}

bool StatusWriter::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  {
    core::MutexLock l(mu_);
    while (!Idle()) {
      if (idle_cv_.WaitUntil(l, deadline) == std::cv_status::timeout && !Idle()) return false;
    }
  }
  return recorder_->Flush(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(std::chrono::steady_clock::duration::zero(), deadline - std::chrono::steady_clock::now())));
}

// A failed write (API server down, timeout, 5xx, a conflict that kept repeating) is kept and retried with
// backoff unless a newer status for the same object arrived meanwhile; the scheduler's memory of what it
// emitted assumes the write eventually lands.
void StatusWriter::WritePodGroup(const std::string& key, sched::PodGroupStatusUpdate u, int attempt,
                                 const std::string& now) {
  core::Status s = WritePodGroupStatus(*client_, u, lookup_ ? lookup_(u.ns, u.name) : nullptr, now, &stats_);
  if (s.ok() || core::IsNotFound(s)) return;
  stats_.podgroup_errors++;
  kube::log::Warn("podgroup status write failed; will retry").Kv("podgroup", key).Kv("error", s);
  core::MutexLock l(mu_);
  // A newer status queued or held meanwhile replaces this one.
  if (stopping_ || pg_.count(key) || pg_retry_.count(key)) return;
  pg_retry_[key] = {std::move(u), attempt + 1, std::chrono::steady_clock::now() + RetryDelay(attempt)};
}

void StatusWriter::WriteQueue(const std::string& name, QueueAllocation alloc, int attempt) {
  json allocated = json::object();
  for (const auto& res : alloc.cleared) allocated[res] = nullptr;
  for (const auto& [res, q] : alloc.allocated) allocated[res] = q.ToString();
  json patch = {{"status", {{"allocated", allocated}}}};
  auto r = client_->Patch(api::Queue::Resource(), "", name, kube::PatchType::kMerge, patch, "status");
  if (r.ok()) {
    stats_.queue_writes++;
    return;
  }
  if (core::IsNotFound(r.status())) return;
  stats_.queue_errors++;
  kube::log::Warn("queue status write failed; will retry").Kv("queue", name).Kv("error", r.status());
  core::MutexLock l(mu_);
  if (stopping_ || queues_.count(name)) return;
  queue_retry_[name] = {std::move(alloc), attempt + 1, std::chrono::steady_clock::now() + RetryDelay(attempt)};
}

void StatusWriter::WritePod(const PodConditionSpec& c, const std::string& now) {
  auto r = client_->Patch(api::Pod::Resource(), c.ns, c.name, kube::PatchType::kStrategicMerge,
                          PodUnschedulablePatch(c, now), "status");
  if (r.ok()) {
    stats_.pod_condition_writes++;
  } else if (!core::IsNotFound(r.status())) {  // a pod deleted meanwhile needs nothing
    stats_.pod_condition_errors++;
    kube::log::Warn("pod condition write failed").Kv("pod", c.ns + "/" + c.name).Kv("error", r.status());
  }
}

void StatusWriter::Run() {
  for (;;) {
    Kind kind = Kind::kPodGroup;
    std::string key;
    int attempt = 0;
    std::optional<sched::PodGroupStatusUpdate> pg;
    std::optional<QueueAllocation> queue;
    std::optional<PodConditionSpec> pod;
    {
      core::MutexLock l(mu_);
      for (;;) {
        if (stopping_) return;
        const auto now = std::chrono::steady_clock::now();
        TakeDueRetries(&pg_, &pg_retry_, Kind::kPodGroup, now);
        TakeDueRetries(&queues_, &queue_retry_, Kind::kQueue, now);
        if (HasIdleWork()) break;
        auto next = NextRetry();
        if (next) cv_.WaitUntil(l, *next);
        else cv_.Wait(l);
      }
      if (auto it = FirstIdle(pg_, Kind::kPodGroup); it != pg_.end()) {
        kind = Kind::kPodGroup;
        key = it->first;
        pg = std::move(it->second);
        pg_.erase(it);
        // Recorded when sent, not when it lands: a pod that starts while its PodGroup's phase change is in
        // flight only moves a counter, and waits. Should this write fail, the status held meanwhile (or the
        // retry of this one) still carries the phase.
        RecordWritten(key, *pg);
      } else if (auto qt = FirstIdle(queues_, Kind::kQueue); qt != queues_.end()) {
        kind = Kind::kQueue;
        key = qt->first;
        queue = std::move(qt->second);
        queues_.erase(qt);
        if (counter_interval_ > std::chrono::steady_clock::duration::zero())
          queue_written_[key] = std::chrono::steady_clock::now();
      } else if (auto pt = FirstIdle(pods_, Kind::kPod); pt != pods_.end()) {
        kind = Kind::kPod;
        key = pt->first;
        pod = std::move(pt->second);
        pods_.erase(pt);
      }
      const std::string fk = FlightKey(kind, key);
      if (auto a = attempts_.find(fk); a != attempts_.end()) {
        attempt = a->second;
        attempts_.erase(a);
      }
      in_flight_.insert(fk);
    }
    const std::string now = core::FormatRfc3339(clock_->WallNow());
    if (pg) WritePodGroup(key, std::move(*pg), attempt, now);
    else if (queue) WriteQueue(key, std::move(*queue), attempt);
    else if (pod) WritePod(*pod, now);
    {
      core::MutexLock l(mu_);
      in_flight_.erase(FlightKey(kind, key));
    }
    // A newer value for this key may have been waiting for this write; and WaitIdle may be satisfied now.
    cv_.NotifyOne();
    idle_cv_.NotifyAll();
  }
}

}  // namespace tephra::scheduler
