// `tephra scheduler`: Volcano-compatible batch scheduler process (scheduler-ext/, docs/scheduler-process.md).
#include <cstdio>

#include "common.h"
#include "tephra/scheduler/process.h"

namespace tephra::cmd {

void RegisterScheduler(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("scheduler", "Volcano-compatible batch scheduler");
  auto* flags = new CommonFlags();                      // lives for the process
  auto* o = new scheduler::SchedulerOptions();          // lives for the process
  auto* names = new std::vector<std::string>();
  auto* period = new std::string("1s");
  auto* min_interval = new std::string("20ms");
  auto* resync = new std::string("30s");
  auto* slice = new std::string("20ms");
  auto* position_interval = new std::string("2s");
  auto* estimate_resolution = new std::string("30s");
  auto* listen = new std::string();
  // Volcano's scheduler defaults (2000/2000): the binds are paced by this bucket, and 50/s would make the
  // client, not the API server, the binding ceiling. Status writes and Events have clients of their own.
  flags->kube_api_qps = 2000;
  flags->kube_api_burst = 2000;
  AddCommonFlags(app, flags);
  app->add_option("--scheduler-conf", o->scheduler_conf,
                  "Volcano scheduler configuration file (YAML); reloaded when it changes. Default: built-in "
                  "Helm default (enqueue, allocate, backfill)");
  app->add_option("--disable-default-scheduler-config", o->disable_default_conf,
                  "Exit when --scheduler-conf cannot be read or is invalid at start-up, instead of scheduling with "
                  "the built-in default (Volcano's flag)")
      ->default_str("false");
  app->add_option("--schedule-period", *period, "Time between scheduling cycles (e.g. 1s, 500ms)");
  app->add_option("--min-schedule-interval", *min_interval,
                  "A relevant change (new pod, PodGroup, node, freed capacity) starts a cycle early, at most this "
                  "often; equal to --schedule-period gives a strictly periodic loop");
  app->add_option("--status-resync-period", *resync,
                  "Re-send every PodGroup and Queue status this often, so a lost or overwritten write is "
                  "corrected (unchanged objects cost no API call); 0 = never");
  app->add_option("--allocate-slice", *slice,
                  "Longest stretch of the allocate action in one cycle; the next cycle resumes where it stopped, "
                  "after the changes that arrived meanwhile are applied (0 = no limit, like Volcano)");
  app->add_option("--default-queue", o->default_queue, "Queue for PodGroups that name none");
  app->add_option("--scheduler-name", *names,
                  "Pods whose spec.schedulerName is one of these are scheduled (repeatable; default volcano)");
  app->add_option("--leader-elect", o->leader_elect, "Take the vc-scheduler Lease before scheduling")
      ->default_str("true");
  app->add_option("--lock-object-namespace,--leader-elect-resource-namespace", o->lock_object_namespace,
                  "Namespace of the leader-election Lease (both of Volcano's names)");
  AddNoOpFlags(app, {"--node-worker-threads", "--percentage-nodes-to-find", "--minimum-percentage-nodes-to-find",
                     "--minimum-feasible-nodes", "--plugins-dir", "--ignored-provisioners", "--scheduler-sharding-mode",
                     "--cache-dump-dir", "--enable-cache-dumper"});
  app->add_option("--listen-address", *listen, "host:port for /metrics (Volcano's name; default :8080)");
  app->add_option("--bind-workers", o->bind_workers, "Concurrent pods/binding requests (paced by --kube-api-qps)")
      ->check(CLI::PositiveNumber);
  app->add_option("--bind-guard", o->bind_guard,
                  "Check each bind decision's hard constraints (selector, affinity, taints, cordon, resources, devices, "
                  "host ports, volumes) against the cache before posting it; a failing one is refused "
                  "(tephra_scheduler_bind_refused_total)");
  app->add_option("--status-workers", o->status_workers,
                  "Concurrent PodGroup/Queue status and pod-condition writes (paced by --kube-api-qps)")
      ->check(CLI::PositiveNumber);
  app->add_option("--topology-label-keys", o->topology_label_keys,
                  "Node label keys giving network tiers 1, 2, ... when the cluster has no HyperNodes "
                  "(comma-separated; default volcano.sh/hypernode-leaf,volcano.sh/hypernode-spine)")
      ->delimiter(',');
  app->add_option("--retry-unchanged-every", o->retry_unchanged_every_cycles,
                  "Retry unschedulable gangs whose inputs did not change every N cycles");
  app->add_option("--gang-timeout-seconds", o->gang_timeout_seconds,
                  "Release a gang that stays below its minimum while holding placed pods (never whole yet, or "
                  "waiting for replacements after losing pods) after this long; 0 = never")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--queue-position-interval", *position_interval,
                  "Recompute each waiting job's place in its queue (the PodGroup's Queued condition, shown by "
                  "`tephra ctl job why`) at most this often; 0 = off")
      ->capture_default_str();
  app->add_option("--position-writes-per-second", o->position_writes_per_second,
                  "Budget of PodGroup status writes that only move a queue position (the front of each queue "
                  "first); other status changes are never delayed by it")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--reservation-depth", o->reservation_depth,
                  "Blocked gangs (in the queue order) that get a reservation: the earliest time and the nodes at "
                  "which they fit, from running jobs' runningEstimate; jobs behind them start only where they "
                  "leave that capacity alone or end before it is due. 0 = off (Volcano's behaviour), 1 = EASY "
                  "backfill, more = conservative backfill (docs/reservations.md)")
      ->check(CLI::Range(0, 10000))
      ->capture_default_str();
  app->add_option("--estimate-depth", o->estimate_depth,
                  "Blocked gangs after the reserved ones that get a lower-bound start estimate (with "
                  "--reservation-depth > 0)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app->add_option("--estimate-resolution", *estimate_resolution,
                  "Written start estimates are rounded up to this step, so a waiting PodGroup is rewritten when "
                  "its estimate moves a step, not every cycle")
      ->capture_default_str();
  app->add_flag("--enable-web-view", o->enable_web_view,
                  "Serve a read-only web view of queues, waiting and running jobs, the cluster map and recent node "
                  "faults at /ui/ on the metrics server (--listen-address; same TLS and authentication as /metrics; "
                  "docs/web-view.md)");
  app->add_option("--extender-address", o->extender_address,
                  "host:port serving the kube-scheduler extender API (filter, prioritize, bind; docs/extender.md); "
                  "default off");
  app->add_option("--extender-prefix", o->extender_prefix,
                  "URL path prefix of the extender API, e.g. /tephra -> /tephra/filter (kube-scheduler urlPrefix)");
  app->add_option_function<std::string>(
         "--extender-bind-from",
         [o](const std::string& v) { o->extender_bind_from_any = v == "any"; },
         "Who may POST the extender's bind: loopback (default; the kube-scheduler beside it) or any")
      ->check(CLI::IsMember({"loopback", "any"}));
  app->callback([=] {
    ApplyCommonFlags(*flags, o);
    if (!names->empty()) o->scheduler_names = *names;
    if (!listen->empty()) o->listen_address = *listen;
    if (!flags->metrics_addr.empty()) o->listen_address = flags->metrics_addr;
    if (!flags->health_addr.empty()) o->health_address = flags->health_addr;
    // Go-style durations: "<n>ms", "<n>s", "<n>m" (fractional allowed).
    auto parse = [&](const char* flag, const std::string& p, std::chrono::milliseconds* out, bool allow_zero) {
      double ms = -1;
      try {
        if (p.size() > 2 && p.substr(p.size() - 2) == "ms") ms = std::stod(p.substr(0, p.size() - 2));
        else if (p.size() > 1 && p.back() == 's') ms = std::stod(p.substr(0, p.size() - 1)) * 1000;
        else if (p.size() > 1 && p.back() == 'm') ms = std::stod(p.substr(0, p.size() - 1)) * 60000;
        else if (allow_zero && p == "0") ms = 0;
      } catch (...) {
        ms = -1;
      }
      if (ms < 0 || (ms == 0 && !allow_zero)) {
        std::fprintf(stderr, "tephra scheduler: %s \"%s\": want a duration such as 1s or 200ms\n", flag, p.c_str());
        return false;
      }
      *out = std::chrono::milliseconds(static_cast<int64_t>(ms));
      return true;
    };
    if (!parse("--schedule-period", *period, &o->schedule_period, false) ||
        !parse("--min-schedule-interval", *min_interval, &o->min_schedule_interval, true) ||
        !parse("--status-resync-period", *resync, &o->status_resync_period, true) ||
        !parse("--allocate-slice", *slice, &o->allocate_slice, true) ||
        !parse("--queue-position-interval", *position_interval, &o->queue_position_interval, true)) {
      *exit_code = 2;
      return;
    }
    std::chrono::milliseconds resolution{0};
    if (!parse("--estimate-resolution", *estimate_resolution, &resolution, true)) {
      *exit_code = 2;
      return;
    }
    o->estimate_resolution = std::chrono::ceil<std::chrono::seconds>(resolution);
    *exit_code = scheduler::RunScheduler(*o);
  });
}

}  // namespace tephra::cmd
