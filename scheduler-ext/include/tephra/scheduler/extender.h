// The kube-scheduler extender API served by `tephra scheduler --extender-address` (docs/extender.md).
//
// A cluster that keeps kube-scheduler points its `extenders:` configuration at Tephra and gets Tephra's view
// of the cluster for every pod kube-scheduler places:
//   POST <prefix>/filter      ExtenderArgs -> ExtenderFilterResult: Tephra's predicate plugins (node
//                             readiness/cordon, selector and required affinity, taints, pod anti-affinity)
//                             plus resource fit against Tephra's accounting, and gang admission;
//   POST <prefix>/prioritize  ExtenderArgs -> HostPriorityList: Tephra's NodeOrder plugins (nodeorder,
//                             binpack, task-topology) scaled to 0..MaxExtenderPriority (10);
//   POST <prefix>/bind        ExtenderBindingArgs -> ExtenderBindingResult: POST pods/binding.
//
// Wire format (k8s.io/kube-scheduler/extender/v1): the Go structs carry no json tags, so kube-scheduler sends
// and expects the Go field names ("Pod", "NodeNames", "FailedNodes", "Host", "Score", "PodName", ...); Go's
// decoder matches keys case-insensitively, so requests are read the same way here (older extenders used
// lower-case tags such as "nodenames") and answers use the Go names.
//
// The Extender is pure over sched::ClusterState: the evaluation runs where the state is owned (the
// scheduler process's state thread, between cycles), while parsing and encoding JSON happen on the HTTP
// server's threads. The Extender owns its own plugin instances built from the same SchedulerConf, so a
// request never disturbs the scheduling cycle's plugin state.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tephra/api/core_v1.h"
#include "tephra/core/status.h"
#include "tephra/kube/client.h"
#include "tephra/kube/http_server.h"
#include "tephra/sched/cluster_state.h"
#include "tephra/sched/config.h"
#include "tephra/sched/framework.h"

namespace tephra::scheduler {

// kube-scheduler's MaxExtenderPriority: extender scores are 0..10 (kube-scheduler multiplies them by the
// extender's weight and by MaxNodeScore/MaxExtenderPriority).
inline constexpr int kMaxExtenderPriority = 10;

struct ExtenderReply {
  int http_status = 200;  // 400 for a request that cannot be parsed; the body then says why
  std::string body;       // JSON (or a plain-text error when http_status != 200)
};

// ExtenderArgs, parsed.
struct ExtenderArgs {
  api::Pod pod;
  bool by_names = false;  // NodeNames given (nodeCacheCapable); else Nodes
  std::vector<std::string> names;
  api::json nodes;        // the request's NodeList (echoed back, filtered) when !by_names
};
core::StatusOr<ExtenderArgs> ParseExtenderArgs(const std::string& body);

// What Filter decided, before encoding: (node, reason) pairs.
struct FilterVerdict {
  core::Status error;  // not OK: a plugin could not open its session (answered 500, naming it)
  std::vector<std::string> passed;
  std::vector<std::pair<std::string, std::string>> failed, unresolvable;
};
ExtenderReply EncodeFilterResult(ExtenderArgs args, const FilterVerdict& v);
// Raw scores per args.names entry (NaN: node unknown), scaled to 0..kMaxExtenderPriority here.
ExtenderReply EncodePrioritizeResult(const ExtenderArgs& args, const core::StatusOr<std::vector<double>>& scores);

class Extender {
 public:
  // Validates `conf` against `registry` and creates the extender's own plugin instances.
  static core::StatusOr<std::unique_ptr<Extender>> Create(const sched::SchedulerConf& conf,
                                                          const sched::PluginRegistry& registry);
  // Configuration reload (the process calls it with every accepted --scheduler-conf); on error the old
  // configuration stays. Caller holds the process mutex.
  core::Status UpdateConf(const sched::SchedulerConf& conf);

  // Evaluation only, with the state owned by the caller for the duration.
  FilterVerdict Filter(sched::ClusterState& state, const ExtenderArgs& args);
  core::StatusOr<std::vector<double>> Prioritize(sched::ClusterState& state, const ExtenderArgs& args);
  // Parse + evaluate + encode in one call (tests, simple callers).
  ExtenderReply Filter(sched::ClusterState& state, const std::string& body);
  ExtenderReply Prioritize(sched::ClusterState& state, const std::string& body);

 private:
  Extender(sched::SchedulerConf conf, sched::PluginRegistry registry, std::vector<sched::PluginSlot> plugins)
      : conf_(std::move(conf)), registry_(std::move(registry)), plugins_(std::move(plugins)) {}

  sched::SchedulerConf conf_;
  sched::PluginRegistry registry_;
  std::vector<sched::PluginSlot> plugins_;
};

// ExtenderBindingArgs.
struct ExtenderBinding {
  std::string pod_name, pod_namespace, pod_uid, node;
};
core::StatusOr<ExtenderBinding> ParseBindingArgs(const std::string& body);
// POSTs pods/binding through `client`; the ExtenderBindingResult reply (Error set on failure; a 409 says
// the pod is already assigned). A body that does not parse is a 400.
ExtenderReply Bind(kube::Client& client, const std::string& body);

// Runs `fn` with the scheduler state, where the state is owned (SchedulerProcess::WithState); blocks until done.
using WithState = std::function<void(const std::function<void(sched::ClusterState&)>& fn)>;

// Installs POST <prefix>/filter, <prefix>/prioritize and <prefix>/bind on `server`. `prefix` is "" or
// "/path" (a trailing '/' is dropped). `extender` must outlive the server.
// /bind writes a Binding with the scheduler's credentials, so it is answered only to a peer on this host (the
// kube-scheduler beside it, --extender-bind-from=loopback) unless bind_from_any: nothing else on the pod
// network may place pods through Tephra.
void InstallExtenderEndpoints(kube::HttpServer& server, const std::string& prefix, Extender* extender,
                              WithState with_state, kube::ClientPtr bind_client, bool bind_from_any = false);

}  // namespace tephra::scheduler
