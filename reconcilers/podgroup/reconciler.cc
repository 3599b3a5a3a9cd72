#include "podgroup/reconciler.h"

#include <cctype>
#include <type_traits>
#include <utility>

#include "tephra/api/labels.h"
#include "tephra/kube/log.h"

namespace tephra::reconcilers::podgroup {

void PodGroupReconciler::RegisterHandlers(kube::Controller& c) {
  auto names = opts_.scheduler_names;
  auto maybe = [&c, names](const api::Pod& p) {
    if (NeedsPodGroup(p, names)) c.Enqueue(p.metadata.Key());
  };
  opts_.pods->AddEventHandler({
      .on_add = [maybe](const kube::Informer<api::Pod>::Ptr& p) { maybe(*p); },
      .on_update = [maybe](const kube::Informer<api::Pod>::Ptr&, const kube::Informer<api::Pod>::Ptr& p) { maybe(*p); },
      .on_delete = nullptr,
  });
  auto watch_scale = [&c](auto* informer, std::string_view prefix) {
    if (!informer) return;
    using Ptr = typename std::remove_pointer_t<decltype(informer)>::Ptr;
    auto at_zero = [&c, prefix = std::string(prefix)](const Ptr& w) {
      if (w && w->replicas == 0) c.Enqueue(prefix + w->metadata.Key());
    };
    informer->AddEventHandler({
        .on_add = at_zero,
        .on_update = [at_zero](const Ptr&, const Ptr& w) { at_zero(w); },
        .on_delete = nullptr,
    });
  };
  watch_scale(opts_.replica_sets, kReplicaSetKeyPrefix);
  watch_scale(opts_.stateful_sets, kStatefulSetKeyPrefix);
}

kube::ReconcileResult PodGroupReconciler::ReconcileWorkload(const ScalableWorkload* w, const std::string& key) {
  if (!w) return kube::ReconcileResult::Success();  // gone: its PodGroup goes with it (owner reference)
  auto pg = opts_.pod_groups->Get(w->metadata.namespace_, std::string(api::kPodGroupNamePrefix) + w->metadata.uid);
  auto name = PlanScaledToZero(w->metadata, w->replicas, pg.get());
  if (!name) return kube::ReconcileResult::Success();
  kube::DeleteOptions opts;
  opts.precondition_uid = pg->metadata.uid;  // never a newer group that reused the name
  core::Status s = opts_.client->Delete(api::PodGroup::Resource(), w->metadata.namespace_, *name, opts);
  if (!s.ok() && !core::IsNotFound(s) && !core::IsConflict(s))
    return kube::ReconcileResult::Error(s.Annotate("deleting PodGroup " + *name + " of " + key));
  if (s.ok()) kube::log::Info("deleted PodGroup of a workload scaled to 0").Kv("workload", key).Kv("podgroup", *name);
  return kube::ReconcileResult::Success();
}

core::StatusOr<std::optional<std::map<std::string, std::string>>> PodGroupReconciler::OwnerAnnotations(
    const api::Pod& pod) {
  const api::OwnerReference* ref = pod.metadata.ControllerRef();
  if (!ref) return std::optional<std::map<std::string, std::string>>();
  // REST path from the reference: the plural of every built-in workload kind is lower(kind) + "s".
  std::string plural = ref->kind;
  for (auto& ch : plural) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  plural += "s";
  const bool core_group = ref->api_version.find('/') == std::string::npos;
  std::string path = (core_group ? "/api/" : "/apis/") + ref->api_version + "/namespaces/" + pod.metadata.namespace_ +
                     "/" + plural + "/" + ref->name;
  auto j = opts_.client->Raw("GET", path, nullptr);
  if (!j.ok()) {
    if (core::IsNotFound(j.status())) return std::optional<std::map<std::string, std::string>>();
    // An owner of a kind the controller may not read (a custom resource such as a PyTorchJob: the chart grants
    // get on the built-in workload kinds only) only means no annotations to inherit; retrying would leave its
    // pods without a PodGroup for ever.
    if (j.status().code() == core::StatusCode::kPermissionDenied) {
      kube::log::Info("owner not readable; its pods' PodGroup inherits no annotations")
          .Kv("owner", ref->kind + "/" + ref->name)
          .Kv("error", j.status());
      return std::optional<std::map<std::string, std::string>>();
    }
    return j.status().Annotate("reading owner " + ref->kind + " " + ref->name);
  }
  std::map<std::string, std::string> out;
  if (j->contains("metadata") && (*j)["metadata"].contains("annotations") && (*j)["metadata"]["annotations"].is_object())
    for (const auto& [k, v] : (*j)["metadata"]["annotations"].items())
      if (v.is_string()) out[k] = v.get<std::string>();
  return std::optional<std::map<std::string, std::string>>(std::move(out));
}

kube::ReconcileResult PodGroupReconciler::Reconcile(const std::string& key) {
  for (auto [prefix, is_rs] : {std::pair{kReplicaSetKeyPrefix, true}, std::pair{kStatefulSetKeyPrefix, false}}) {
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string wkey = key.substr(prefix.size());
    if (is_rs) {
      if (!opts_.replica_sets) return kube::ReconcileResult::Success();
      auto w = opts_.replica_sets->Get(wkey);
      return ReconcileWorkload(w.get(), key);
    }
    if (!opts_.stateful_sets) return kube::ReconcileResult::Success();
    auto w = opts_.stateful_sets->Get(wkey);
    return ReconcileWorkload(w.get(), key);
  }
  auto pod = opts_.pods->Get(key);
  if (!pod || !NeedsPodGroup(*pod, opts_.scheduler_names)) return kube::ReconcileResult::Success();
  Observed obs;
  obs.pod = *pod;
  obs.scheduler_names = opts_.scheduler_names;
  obs.inherit_owner_annotations = opts_.inherit_owner_annotations;
  obs.pod_group_exists = opts_.pod_groups->Get(pod->metadata.namespace_, PodGroupName(*pod)) != nullptr;
  if (!obs.pod_group_exists) {
    auto owner = OwnerAnnotations(*pod);
    if (!owner.ok()) return kube::ReconcileResult::Error(owner.status());
    obs.owner_annotations = std::move(owner).value();
  }
  Actions a = Plan(obs);
  if (a.create_pod_group) {
    auto r = opts_.client->Create(api::PodGroup::Resource(), pod->metadata.namespace_, api::ToJson(*a.create_pod_group));
    if (!r.ok() && !core::IsAlreadyExists(r.status()))
      return kube::ReconcileResult::Error(r.status().Annotate("creating PodGroup " + a.create_pod_group->metadata.name));
    if (r.ok())
      kube::log::Info("created PodGroup for pod").Kv("pod", key).Kv("podgroup", a.create_pod_group->metadata.name);
  }
  if (a.annotate_pod) {
    api::json patch = {{"metadata", {{"annotations", {{std::string(api::kPodGroupAnnotation), *a.annotate_pod}}}}}};
    auto r = opts_.client->Patch(api::Pod::Resource(), pod->metadata.namespace_, pod->metadata.name,
                                 kube::PatchType::kMerge, patch);
    if (!r.ok() && !core::IsNotFound(r.status()))
      return kube::ReconcileResult::Error(r.status().Annotate("annotating pod " + key));
  }
  return kube::ReconcileResult::Success();
}

}  // namespace tephra::reconcilers::podgroup
