#include "tephra/kube/leader_election.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "tephra/kube/log.h"

namespace tephra::kube {
namespace {

const ResourceInfo kLeases{"coordination.k8s.io", "v1", "Lease", "leases", true};

std::string Secs(std::chrono::milliseconds d) {
  char b[32];
  std::snprintf(b, sizeof b, "%gs", d.count() / 1000.0);
  return b;
}

// metav1.MicroTime: RFC 3339 with exactly six fractional digits, UTC.
std::string MicroTime(core::Clock::WallTime t) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  long frac = static_cast<long>(us % 1000000);
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char b[80];
  std::snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return b;
}

LeaderElectionRecord FromLease(const json& lease) {
  LeaderElectionRecord r;
  if (!lease.contains("spec") || !lease["spec"].is_object()) return r;
  const json& s = lease["spec"];
  auto str = [&](const char* k) { return s.contains(k) && s[k].is_string() ? s[k].get<std::string>() : std::string(); };
  auto num = [&](const char* k) { return s.contains(k) && s[k].is_number_integer() ? s[k].get<int>() : 0; };
  r.holder_identity = str("holderIdentity");
  r.lease_duration_seconds = num("leaseDurationSeconds");
  r.acquire_time = str("acquireTime");
  r.renew_time = str("renewTime");
  r.lease_transitions = num("leaseTransitions");
  return r;
}

json ToSpec(const LeaderElectionRecord& r) {
  return json{{"holderIdentity", r.holder_identity},
              {"leaseDurationSeconds", r.lease_duration_seconds},
              {"acquireTime", r.acquire_time},
              {"renewTime", r.renew_time},
              {"leaseTransitions", r.lease_transitions}};
}

}  // namespace

core::Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  if (c.lock_name.empty()) return core::InvalidArgumentError("leader election: lock name is required");
  if (c.lease_duration.count() <= 0 || c.renew_deadline.count() <= 0 || c.retry_period.count() <= 0) {
    return core::InvalidArgumentError("leader election: leaseDuration, renewDeadline and retryPeriod must be positive");
  }
  if (c.jitter_factor < 0) return core::InvalidArgumentError("leader election: jitter factor must be >= 0");
  if (c.lease_duration <= c.renew_deadline) {
    return core::InvalidArgumentError("leader election: leaseDuration (" + Secs(c.lease_duration) +
                                      ") must be greater than renewDeadline (" + Secs(c.renew_deadline) +
                                      "), so a leader gives up before a standby may take over");
  }
  // client-go uses JitterFactor (1.2) here: a renew deadline shorter than one jittered retry would expire
  // before a second attempt could happen.
  double min_renew = c.jitter_factor * static_cast<double>(c.retry_period.count());
  if (static_cast<double>(c.renew_deadline.count()) <= min_renew) {
    return core::InvalidArgumentError("leader election: renewDeadline (" + Secs(c.renew_deadline) +
                                      ") must be greater than " + std::to_string(c.jitter_factor).substr(0, 4) +
                                      " x retryPeriod (" + Secs(c.retry_period) + ")");
  }
  return core::Status::OK();
}

std::string DefaultIdentity() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0 || host[0] == 0) std::snprintf(host, sizeof host, "unknown");
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(rd()));
  return std::string(host) + "_" + suffix;
}

core::StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::Create(ClientPtr client, LeaderElectionConfig config,
                                                                     const core::Clock* clock) {
  TEPHRA_RETURN_IF_ERROR(ValidateLeaderElectionConfig(config));
  if (!client) return core::InvalidArgumentError("leader election: client is required");
  if (config.identity.empty()) config.identity = DefaultIdentity();
  return std::unique_ptr<LeaderElector>(
      new LeaderElector(std::move(client), std::move(config), clock ? *clock : core::RealClock::Get()));
}

LeaderElector::LeaderElector(ClientPtr client, LeaderElectionConfig config, const core::Clock& clock)
    : client_(std::move(client)), config_(std::move(config)), clock_(clock),
      rng_(config_.seed ? config_.seed : std::random_device{}()) {}

LeaderElector::~LeaderElector() { Stop(); }

bool LeaderElector::IsLeader() const {
  core::MutexLock l(mu_);
  return state_ == State::kLeader;
}
LeaderElector::State LeaderElector::state() const {
  core::MutexLock l(mu_);
  return state_;
}
std::string LeaderElector::GetLeader() const {
  core::MutexLock l(mu_);
  return observed_.holder_identity;
}
LeaderElectionRecord LeaderElector::observed_record() const {
  core::MutexLock l(mu_);
  return observed_;
}

std::chrono::nanoseconds LeaderElector::Jittered() {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  double f;
  {
    core::MutexLock l(mu_);
    f = u(rng_);
  }
  auto base = std::chrono::duration_cast<std::chrono::nanoseconds>(config_.retry_period);
  return base + std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(base.count()) * f * config_.jitter_factor));
}

bool LeaderElector::TryAcquireOrRenew() {
  const auto now = clock_.Now();
  const std::string wall = MicroTime(clock_.WallNow());
  const int lease_secs = static_cast<int>(std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
  std::optional<std::string> new_leader;
  auto report = [&] {
    if (new_leader && config_.on_new_leader) config_.on_new_leader(*new_leader);
  };

  auto got = client_->Get(kLeases, config_.lock_namespace, config_.lock_name);
  if (!got.ok()) {
    if (!core::IsNotFound(got.status())) {
      log::Warn("error retrieving lease").Kv("lease", config_.lock_namespace + "/" + config_.lock_name)
          .Kv("error", got.status());
      return false;
    }
    LeaderElectionRecord rec{config_.identity, lease_secs, wall, wall, 0};
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.lock_name}, {"namespace", config_.lock_namespace}}},
                  {"spec", ToSpec(rec)}};
    auto created = client_->Create(kLeases, config_.lock_namespace, lease);
    if (!created.ok()) return false;
    {
      core::MutexLock l(mu_);
      if (observed_.holder_identity != rec.holder_identity) new_leader = rec.holder_identity;
      observed_ = rec;
      observed_rv_ = created->value("/metadata/resourceVersion"_json_pointer, "");
      observed_time_ = now;
      have_observed_ = true;
    }
    report();
    return true;
  }

  LeaderElectionRecord old = FromLease(*got);
  std::string rv = got->value("/metadata/resourceVersion"_json_pointer, "");
  bool we_hold = old.holder_identity == config_.identity;
  {
    core::MutexLock l(mu_);
    if (!have_observed_ || !(old == observed_)) {
      if (observed_.holder_identity != old.holder_identity) new_leader = old.holder_identity;
      observed_ = old;
      observed_rv_ = rv;
      observed_time_ = now;  // the lease duration runs from when WE saw the record change
      have_observed_ = true;
    }
  }
  report();
  new_leader.reset();
  {
    // Someone else holds it and we have not gone a full lease duration without seeing it change.
    core::MutexLock l(mu_);
    if (!old.holder_identity.empty() && !we_hold && observed_time_ + config_.lease_duration > now) return false;
  }

  LeaderElectionRecord rec = old;
  rec.holder_identity = config_.identity;
  rec.lease_duration_seconds = lease_secs;
  rec.renew_time = wall;
  if (!we_hold) {
    rec.acquire_time = wall;
    rec.lease_transitions = old.lease_transitions + 1;
  }
  json lease = *got;
  lease["spec"] = ToSpec(rec);
  lease["metadata"]["resourceVersion"] = rv;  // precondition: a concurrent writer makes this a 409
  auto updated = client_->Update(kLeases, config_.lock_namespace, lease);
  if (!updated.ok()) {
    log::Debug("lease update failed").Kv("lease", config_.lock_name).Kv("error", updated.status());
    return false;
  }
  {
    core::MutexLock l(mu_);
    if (observed_.holder_identity != rec.holder_identity) new_leader = rec.holder_identity;
    observed_ = rec;
    observed_rv_ = updated->value("/metadata/resourceVersion"_json_pointer, "");
    observed_time_ = now;
  }
  report();
  return true;
}

std::optional<std::chrono::nanoseconds> LeaderElector::Poll() {
  State st;
  {
    core::MutexLock l(mu_);
    st = state_;
  }
  if (st == State::kStopped) return std::nullopt;
  const auto retry = std::chrono::duration_cast<std::chrono::nanoseconds>(config_.retry_period);
  if (st == State::kFollower) {
    if (!TryAcquireOrRenew()) return Jittered();
    {
      core::MutexLock l(mu_);
      state_ = State::kLeader;
      renew_round_start_ = clock_.Now() + retry;
    }
    log::Info("acquired lease").Kv("lease", config_.lock_namespace + "/" + config_.lock_name)
        .Kv("identity", config_.identity);
    if (config_.on_started_leading) config_.on_started_leading();
    return retry;
  }
  // Leader: renew. A round starts one RetryPeriod after the last good renew; give up RenewDeadline later.
  const auto now = clock_.Now();
  if (TryAcquireOrRenew()) {
    core::MutexLock l(mu_);
    renew_round_start_ = now + retry;
    return retry;
  }
  core::Clock::TimePoint round_start;
  {
    core::MutexLock l(mu_);
    round_start = renew_round_start_;
  }
  if (now - round_start < config_.renew_deadline) return retry;
  {
    core::MutexLock l(mu_);
    state_ = State::kStopped;
  }
  log::Error("leader election lost: failed to renew lease within renewDeadline")
      .Kv("lease", config_.lock_namespace + "/" + config_.lock_name).Kv("identity", config_.identity);
  if (config_.on_stopped_leading) config_.on_stopped_leading();
  return std::nullopt;
}

void LeaderElector::Run() {
  {
    core::MutexLock l(mu_);
    if (running_ || state_ == State::kStopped) return;
    running_ = true;
  }
  while (true) {
    auto d = Poll();
    core::MutexLock l(mu_);
    if (!d || stop_requested_) break;
    // Sleeps on the real steady clock: Run() is for production; tests call Poll() on a FakeClock.
    const auto until = std::chrono::steady_clock::now() + *d;
    while (!stop_requested_) {
      if (cv_.WaitUntil(l, until) == std::cv_status::timeout) break;
    }
    if (stop_requested_) break;
  }
  bool stop;
  {
    core::MutexLock l(mu_);
    stop = stop_requested_;
  }
  if (stop) Finish();
  core::MutexLock l(mu_);
  running_ = false;
  cv_.NotifyAll();
}

void LeaderElector::Stop() {
  core::MutexLock l(mu_);
  if (stop_requested_) {
    while (running_) cv_.Wait(l);
    return;
  }
  stop_requested_ = true;
  cv_.NotifyAll();
  if (running_) {
    while (running_) cv_.Wait(l);
    return;
  }
  l.Unlock();
  Finish();
}

void LeaderElector::Finish() {
  bool was_leader;
  {
    core::MutexLock l(mu_);
    was_leader = state_ == State::kLeader;
    state_ = State::kStopped;
  }
  if (!was_leader) return;
  if (config_.release_on_cancel) Release();
  if (config_.on_stopped_leading) config_.on_stopped_leading();
}

void LeaderElector::Release() {
  auto got = client_->Get(kLeases, config_.lock_namespace, config_.lock_name);
  if (!got.ok()) return;
  LeaderElectionRecord old = FromLease(*got);
  if (old.holder_identity != config_.identity) return;  // someone else holds it now: nothing to release
  const std::string wall = MicroTime(clock_.WallNow());
  LeaderElectionRecord rec{"", 1, wall, wall, old.lease_transitions};
  json lease = *got;
  lease["spec"] = ToSpec(rec);
  auto updated = client_->Update(kLeases, config_.lock_namespace, lease);
  if (!updated.ok()) {
    log::Warn("failed to release lease").Kv("lease", config_.lock_name).Kv("error", updated.status());
    return;
  }
  core::MutexLock l(mu_);
  observed_ = rec;
  log::Info("released lease").Kv("lease", config_.lock_namespace + "/" + config_.lock_name);
}

}  // namespace tephra::kube
