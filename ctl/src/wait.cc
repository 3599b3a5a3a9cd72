// `job wait`: a watch on one vcjob (field selector metadata.name) from a list's resourceVersion; a stream that
// ends is resumed from the last resourceVersion seen, a 410 re-lists. The deadline is a timer that cancels
// the watch, so nothing polls.
#include "tephra/ctl/wait.h"

#include <thread>

#include "internal.h"
#include "tephra/api/batch.h"
#include "tephra/api/duration.h"
#include "tephra/core/thread_annotations.h"

namespace tephra::ctl {

core::StatusOr<WaitFor> ParseWaitFor(std::string_view text) {
  std::string t(text);
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "completed") return WaitFor::kCompleted;
  if (t == "running") return WaitFor::kRunning;
  if (t == "terminal") return WaitFor::kTerminal;
  return core::InvalidArgumentError("--for: \"" + std::string(text) + "\" is not one of Completed, Running, terminal");
}

std::optional<int> WaitExitCode(WaitFor target, std::string_view phase) {
  if (phase == api::kJobPhaseCompleted) return kExitOk;
  if (phase == api::kJobPhaseFailed) return kExitFailed;
  if (phase == api::kJobPhaseAborted || phase == api::kJobPhaseTerminated) return kExitAborted;
  if (target == WaitFor::kRunning && (phase == api::kJobPhaseRunning || phase == api::kJobPhaseCompleting))
    return kExitOk;
  return std::nullopt;  // Pending, Restarting, Aborting, Terminating, Completing (for Completed), unknown
}

namespace {

using internal::Int;
using internal::json;
using internal::Str;

const char* TargetName(WaitFor t) {
  switch (t) {
    case WaitFor::kCompleted: return "Completed";
    case WaitFor::kRunning: return "Running";
    case WaitFor::kTerminal: return "a terminal phase";
  }
  return "";
}

// Cancels the watch when the deadline passes; Stop() ends it early. Real time: the deadline is the user's.
class Deadline {
 public:
  Deadline(std::optional<std::chrono::milliseconds> timeout, std::shared_ptr<kube::WatchCanceller> c) {
    if (!timeout) return;
    auto at = std::chrono::steady_clock::now() + *timeout;
    thread_ = std::thread([this, at, c] {
      core::MutexLock l(mu_);
      // An explicit loop rather than a predicate wait: the analysis cannot see a predicate lambda run locked.
      while (!stopped_) {
        if (cv_.WaitUntil(l, at) == std::cv_status::timeout) break;
      }
      if (stopped_) return;
      expired_ = true;
      l.Unlock();
      cv_.NotifyAll();  // a Sleep() in a retry backoff returns now, not at the end of its backoff
      c->Cancel();
    });
  }
  ~Deadline() {
    {
      core::MutexLock l(mu_);
      stopped_ = true;
    }
    cv_.NotifyAll();
    if (thread_.joinable()) thread_.join();
  }
  bool expired() {
    core::MutexLock l(mu_);
    return expired_;
  }
  // Waits up to `d` (a retry backoff); returns false when the deadline expired meanwhile.
  bool Sleep(std::chrono::milliseconds d) {
    core::MutexLock l(mu_);
    const auto until = std::chrono::steady_clock::now() + d;
    while (!expired_ && !stopped_) {
      if (cv_.WaitUntil(l, until) == std::cv_status::timeout) break;
    }
    return !expired_;
  }

 private:
  core::Mutex mu_;
  core::CondVar cv_;
  bool stopped_ TEPHRA_GUARDED_BY(mu_) = false;
  bool expired_ TEPHRA_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace

int WaitForJob(Context& ctx, const WaitOptions& o) {
  const auto& res = api::Job::Resource();
  const std::string key = o.ns + "/" + o.name;
  auto canceller = std::make_shared<kube::WatchCanceller>();
  Deadline deadline(o.timeout, canceller);
  std::string last_phase;
  bool seen = false;
  auto observe = [&](const json& job) -> std::optional<int> {
    std::string phase = Str(job, "/status/state/phase");
    if (o.follow && (!seen || phase != last_phase)) {
      ctx.out << Sprintf("%s  %-12s running=%d succeeded=%d failed=%d retryCount=%d\n",
                         core::FormatRfc3339(ctx.clock.WallNow()).c_str(), phase.empty() ? "<none>" : phase.c_str(),
                         static_cast<int>(Int(job, "/status/running")), static_cast<int>(Int(job, "/status/succeeded")),
                         static_cast<int>(Int(job, "/status/failed")), static_cast<int>(Int(job, "/status/retryCount")));
      ctx.out.flush();
    }
    seen = true;
    last_phase = phase;
    return WaitExitCode(o.target, phase);
  };
  auto timed_out = [&] {
    ctx.err << "timed out waiting for job " << key << " to reach " << TargetName(o.target) << " (phase "
            << (last_phase.empty() ? "<none>" : last_phase) << ")\n";
    return int{kExitTimeout};
  };
  auto phase_exit = [&](int rc) {
    if (rc != kExitOk) ctx.err << "job " << key << " is " << last_phase << "\n";
    return rc;
  };

  int failures = 0;
  while (true) {
    if (deadline.expired()) return timed_out();
    kube::ListOptions lo;
    lo.field_selector = "metadata.name=" + o.name;
    auto list = ctx.client.List(res, o.ns, lo);
    if (!list.ok()) {
      if (deadline.expired()) return timed_out();
      if (core::IsUnavailable(list.status()) && ++failures < 5 && deadline.Sleep(std::chrono::seconds(1))) continue;
      ctx.err << "Failed to wait job: " << ctx.Explain(list.status(), "list", res, o.ns).message() << "\n";
      return kExitError;
    }
    if (list->items.empty()) {
      ctx.err << "job " << key << " not found\n";
      return kExitNotFound;
    }
    if (auto rc = observe(list->items.front())) return phase_exit(*rc);
    std::string rv = list->metadata.resource_version;

    // Watch until a decision, a deletion, the deadline, or a reason to re-list.
    while (true) {
      kube::ListOptions wo;
      wo.field_selector = lo.field_selector;
      wo.resource_version = rv;
      wo.allow_watch_bookmarks = true;
      wo.canceller = canceller;
      wo.timeout_seconds = 300;
      std::optional<int> decided;
      bool deleted = false, gone = false;
      core::Status event_error;
      core::Status s = ctx.client.Watch(res, o.ns, wo, [&](kube::WatchEvent&& ev) {
        using T = kube::WatchEvent::Type;
        if (ev.type == T::kError) {
          if (Int(ev.object, "/code") == 410) gone = true;
          else event_error = core::UnavailableError("watch error: " + Str(ev.object, "/message"));
          return false;
        }
        std::string erv = Str(ev.object, "/metadata/resourceVersion");
        if (!erv.empty()) rv = erv;
        if (ev.type == T::kBookmark) return true;
        if (ev.type == T::kDeleted) {
          deleted = true;
          return false;
        }
        decided = observe(ev.object);
        return !decided.has_value();
      });
      if (decided) return phase_exit(*decided);
      if (deleted) {
        ctx.err << "job " << key << " was deleted while waiting\n";
        return kExitNotFound;
      }
      if (deadline.expired()) return timed_out();
      if (gone || core::IsGone(s)) break;  // history compacted: re-list
      if (s.ok() && event_error.ok()) {   // the server closed the stream: resume from rv
        failures = 0;
        continue;
      }
      core::Status err = s.ok() ? event_error : s;
      if (core::IsUnavailable(err) && ++failures < 5 && deadline.Sleep(std::chrono::seconds(1))) break;
      if (deadline.expired()) return timed_out();
      ctx.err << "Failed to wait job: " << ctx.Explain(err, "watch", res, o.ns).message() << "\n";
      return kExitError;
    }
  }
}

namespace internal {

void RegisterJobWait(CLI::App* job, Runner& runner) {
  struct Flags {
    std::string ns = "default", name, positional, target = "Completed", timeout;
    bool follow = false;
    WaitOptions opts;
  };
  auto f = std::make_shared<Flags>();
  auto* app = job->add_subcommand("wait", "wait until a job reaches a phase (exit code tells which)");
  runner.AddConnectionFlags(app);
  app->add_option("name", f->positional, "the name of job");
  app->add_option("-N,--name", f->name, "the name of job (alternative to the positional NAME)");
  app->add_option("-n,--namespace", f->ns, "the namespace of job")->capture_default_str();
  app->add_option("--for", f->target, "Completed, Running (or a later successful phase) or terminal")
      ->capture_default_str();
  app->add_option("--timeout", f->timeout, "give up after this long (Go duration: 90s, 10m, 1h); default: never");
  app->add_flag("--follow", f->follow, "print a line per phase change: time, phase, running/succeeded/failed, retryCount");
  app->footer(
      "Exit codes: 0 reached the awaited phase (Running: Running, Completing or Completed; terminal and Completed: "
      "Completed), 1 API or other error, 2 usage error, 3 job Failed, 4 job Aborted or Terminated, 5 timed out, "
      "6 job not found or deleted while waiting.");
  runner.OnRun(
      app,
      [f]() -> std::string {
        f->opts.name = f->name.empty() ? f->positional : f->name;
        if (f->opts.name.empty()) return "job name (NAME or --name/-N) is mandatory";
        f->opts.ns = f->ns;
        f->opts.follow = f->follow;
        auto t = ParseWaitFor(f->target);
        if (!t.ok()) return t.status().message();
        f->opts.target = *t;
        if (!f->timeout.empty()) {
          auto d = api::ParseGoDuration(f->timeout);
          if (!d.ok()) return "--timeout: " + d.status().message();
          if (d->count() < 0) return "--timeout must not be negative";
          if (d->count() > 0) f->opts.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
        }
        return "";
      },
      [f](Context& ctx) { return WaitForJob(ctx, f->opts); });
}

}  // namespace internal
}  // namespace tephra::ctl
