#include "fault/training_time.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "fault/plan.h"
#include "fault/reconciler.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::fault {

namespace {

std::optional<core::Clock::WallTime> TimeAt(const api::ObjectMeta& m, const char* key) {
  auto it = m.annotations.find(key);
  core::Clock::WallTime t;
  if (it == m.annotations.end() || !core::ParseRfc3339(it->second, &t)) return std::nullopt;
  return t;
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", s);
  return buf;
}

double Between(core::Clock::WallTime a, core::Clock::WallTime b) {
  return std::max(0.0, std::chrono::duration<double>(b - a).count());
}

constexpr std::chrono::seconds kRefresh{30};

}  // namespace

TrainingAccount ReadTrainingAccount(const api::ObjectMeta& m) {
  TrainingAccount a;
  a.since = TimeAt(m, kTrainingSinceAnnotation);
  a.short_since = TimeAt(m, kTrainingShortSinceAnnotation);
  a.until = TimeAt(m, kTrainingUntilAnnotation);
  if (auto it = m.annotations.find(kTrainingLostAnnotation); it != m.annotations.end()) {
    double v = 0;
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
    if (ec == std::errc() && v >= 0) a.lost_seconds = v;
  }
  return a;
}

TrainingStep PlanTraining(const TrainingAccount& account, GangState gang, core::Clock::WallTime now,
                          std::optional<core::Clock::WallTime> seen_whole) {
  TrainingStep step;
  TrainingAccount a = account;
  const bool unwritten = !a.since;
  if (unwritten) {
    if (!gang.whole && !seen_whole) return step;  // still waiting for its first full run: not training time yet
    a.since = seen_whole ? std::min(*seen_whole, now) : now;
    step.annotations[kTrainingSinceAnnotation] = core::FormatRfc3339(*a.since);
  }
  if (a.until) now = *a.until;  // the job ended: its account is closed
  const bool short_now = !gang.whole && !gang.finished && !a.until;
  if (gang.finished && !a.until) {
    a.until = now;
    step.annotations[kTrainingUntilAnnotation] = core::FormatRfc3339(now);
  }
  if (short_now && !a.short_since) {
    a.short_since = now;
    step.annotations[kTrainingShortSinceAnnotation] = core::FormatRfc3339(now);
  } else if (!short_now && a.short_since) {
    a.lost_seconds += Between(*a.short_since, now);
    a.short_since.reset();
    step.annotations[kTrainingLostAnnotation] = Seconds(a.lost_seconds);
    step.annotations[kTrainingShortSinceAnnotation] = nullptr;
  }
  const double wall = Between(*a.since, now);
  const double lost = a.lost_seconds + (a.short_since ? Between(*a.short_since, now) : 0);
  step.ratio = wall <= 0 ? 1.0 : std::clamp((wall - lost) / wall, 0.0, 1.0);
  // Never short so far: nothing to record yet if it ended (ratio 1 for good) or has run whole for less than
  // kTrainingPersistAfter (the caller keeps the start meanwhile).
  if (unwritten && !a.short_since && a.lost_seconds == 0) {
    if (gang.finished) {
      step.annotations = api::json::object();
    } else if (now - *a.since < kTrainingPersistAfter) {
      step.annotations = api::json::object();
      step.unwritten_since = a.since;
    }
  }
  return step;
}

TrainingTimeReconciler::TrainingTimeReconciler(TrainingTimeOptions opts)
    : opts_(std::move(opts)), clock_(opts_.clock ? *opts_.clock : core::RealClock::Get()) {
  auto& reg = opts_.registry ? *opts_.registry : kube::metrics::Registry::Default();
  ratio_ = &reg.AddGauge("tephra_job_effective_training_ratio",
                         "Share of the wall time since a job's gang first ran whole during which it ran whole "
                         "(effective training time)",
                         {"namespace", "job", "podgroup"});
}

void TrainingTimeReconciler::RegisterHandlers(kube::Controller& c) {
  auto group_of_pod = [&c](const api::Pod& p) {
    if (std::string g = GroupKey(p); !g.empty()) c.Enqueue(g);
  };
  opts_.pods->AddEventHandler({
      .on_add = [group_of_pod](const auto& p) { group_of_pod(*p); },
      .on_update = [group_of_pod](const auto&, const auto& p) { group_of_pod(*p); },
      .on_delete = [group_of_pod](const auto& p) { group_of_pod(*p); },
  });
  auto key_of = [](const api::PodGroup& pg) { return pg.metadata.namespace_ + "/" + pg.metadata.name; };
  opts_.pod_groups->AddEventHandler({
      .on_add = [&c, key_of](const auto& pg) { c.Enqueue(key_of(*pg)); },
      .on_update = nullptr,
      .on_delete = [&c, key_of](const auto& pg) { c.Enqueue(key_of(*pg)); },
  });
}

kube::ReconcileResult TrainingTimeReconciler::Reconcile(const std::string& key) {
  const auto slash = key.find('/');
  const std::string ns = key.substr(0, slash), name = key.substr(slash + 1);
  auto pg = opts_.pod_groups->Get(key);
  std::string job = name;
  if (pg)
    for (const auto& r : pg->metadata.owner_references)
      if (r.controller.value_or(false)) job = r.name;
  if (!pg) {
    // Gone: so is its series. The job label is not known any more; every series of the group goes.
    ratio_->RemoveIf([&](const std::vector<std::string>& v) { return v[0] == ns && v[2] == name; });
    core::MutexLock l(mu_);
    unwritten_.erase(key);
    return kube::ReconcileResult::Success();
  }
  GangState gang;
  int running = 0, total = 0, unfinished = 0, succeeded = 0;
  for (const auto& p : opts_.pods->ByIndex(kIndexPodGroup, key)) {
    ++total;
    if (p->status.phase == "Succeeded") ++succeeded;
    if (p->status.phase != "Succeeded" && p->status.phase != "Failed") ++unfinished;
    if (p->status.phase == "Running" && p->metadata.deletion_timestamp.empty() && !p->spec.node_name.empty()) ++running;
  }
  gang.whole = running >= std::max(1, static_cast<int>(pg->spec.min_member));
  gang.finished = total > 0 && unfinished == 0 && succeeded > 0;
  std::optional<core::Clock::WallTime> seen;
  {
    core::MutexLock l(mu_);
    if (auto it = unwritten_.find(key); it != unwritten_.end() && it->second.uid == pg->metadata.uid)
      seen = it->second.since;
  }
  const auto now = clock_.WallNow();
  const TrainingStep step = PlanTraining(ReadTrainingAccount(pg->metadata), gang, now, seen);
  if (!step.annotations.empty()) {
    api::json patch = {{"metadata", {{"annotations", step.annotations}}}};
    auto r = opts_.client->Patch(api::PodGroup::Resource(), ns, name, kube::PatchType::kMerge, patch);
    if (!r.ok() && !core::IsNotFound(r.status()))
      return kube::ReconcileResult::Error(r.status().Annotate("recording the training time of PodGroup " + key));
  }
  {
    core::MutexLock l(mu_);
    if (step.unwritten_since) unwritten_[key] = {pg->metadata.uid, *step.unwritten_since};
    else unwritten_.erase(key);
  }
  if (step.ratio) ratio_->With({ns, job, name})->Set(*step.ratio);
  // The start is written when it has been whole for kTrainingPersistAfter, even if no pod changes meanwhile.
  if (step.unwritten_since) {
    auto due = std::chrono::duration_cast<std::chrono::milliseconds>(*step.unwritten_since + kTrainingPersistAfter - now);
    return kube::ReconcileResult::RequeueAfter(std::clamp(due, std::chrono::milliseconds(1), std::chrono::milliseconds(kRefresh)));
  }
  // The ratio moves while the gang is short; an ended job's stays as it ended.
  if (step.ratio && !gang.finished && !pg->metadata.annotations.count(kTrainingUntilAnnotation))
    return kube::ReconcileResult::RequeueAfter(kRefresh);
  return kube::ReconcileResult::Success();
}

}  // namespace tephra::reconcilers::fault
