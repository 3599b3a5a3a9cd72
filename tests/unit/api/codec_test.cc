// Round trips for every kind: decode -> encode must reproduce the document, including fields Tephra does
// not model, at every nesting level.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "test_util.h"
#include "tephra/api/json_pruned.h"
#include "tephra/api/kinds.h"
#include "tephra/api/labels.h"

namespace tephra::api {
namespace {

using testing::J;
using testing::LoadTestdata;

// Decodes as T and re-encodes; reports decode errors as a Status.
template <typename T>
StatusOr<json> RoundTrip(const json& in) {
  StatusOr<T> v = FromJson<T>(in);
  if (!v.ok()) return v.status();
  return ToJson(*v);
}

// Visits every JSON object in `doc` with its RFC 6901 pointer.
void ForEachObject(const json& doc, const json::json_pointer& ptr,
                   const std::function<void(const json::json_pointer&)>& fn) {
  if (doc.is_object()) {
    fn(ptr);
    for (auto it = doc.begin(); it != doc.end(); ++it) ForEachObject(it.value(), ptr / it.key(), fn);
  } else if (doc.is_array()) {
    for (size_t i = 0; i < doc.size(); ++i) ForEachObject(doc[i], ptr / i, fn);
  }
}

// For every object in the document, adds an unknown key (a string, then a nested structure) and checks
// the round trip keeps it. Objects that are typed maps (quantities, int maps, ...) reject the string
// value at decode time and are skipped; everything that decodes must round-trip exactly.
template <typename T>
void ExpectPreservesUnknownEverywhere(const json& doc, int min_positions) {
  int preserved = 0;
  ForEachObject(doc, json::json_pointer(), [&](const json::json_pointer& p) {
    // A structured value: string maps (labels, ...) reject it at decode time and are skipped.
    for (const json& value : {J(R"({"nested": [1, {"deep": null}], "n": 2.5})")}) {
      json mutated = doc;
      mutated[p]["zzUnknownField"] = value;
      StatusOr<json> out = RoundTrip<T>(mutated);
      if (!out.ok()) continue;  // a typed map (ResourceList, map<string,int32>, ...) refusing the value
      EXPECT_EQ(*out, mutated) << "unknown field lost at " << p.to_string();
      if (*out == mutated) ++preserved;
    }
  });
  EXPECT_GE(preserved, min_positions);
}

template <typename T>
void CheckTestdata(const std::string& file, int min_positions) {
  SCOPED_TRACE(file);
  json doc = LoadTestdata(file);
  StatusOr<json> out = RoundTrip<T>(doc);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, doc) << "diff: " << json::diff(doc, *out).dump();
  ExpectPreservesUnknownEverywhere<T>(doc, min_positions);
}

TEST(CodecTest, MpiJobManifest) {
  CheckTestdata<Job>("mpi_job.json", 15);
  Job job = *FromJson<Job>(LoadTestdata("mpi_job.json"));
  EXPECT_EQ(job.spec.min_available, 3);
  ASSERT_EQ(job.spec.tasks.size(), 2u);
  EXPECT_EQ(job.spec.tasks[1].name, "mpiworker");
  EXPECT_EQ(job.spec.tasks[1].template_.spec.containers[0].resources.requests.at("memory").ToString(), "2Gi");
  EXPECT_EQ(job.spec.plugins.at("mpi")[0], "--master=mpimaster");
  EXPECT_EQ(job.spec.ttl_seconds_after_finished, 600);
  EXPECT_EQ(job.spec.policies[0].event, kEventPodEvicted);
  EXPECT_EQ(job.metadata.labels.at(std::string(kJobTypeKey)), "MPI");
  // imagePullSecrets is not modeled: kept in the PodSpec's extra.
  EXPECT_TRUE(job.spec.tasks[0].template_.spec.extra.contains("imagePullSecrets"));
}

TEST(CodecTest, PyTorchJobManifest) {
  CheckTestdata<Job>("pytorch_job.json", 30);
  Job job = *FromJson<Job>(LoadTestdata("pytorch_job.json"));
  const TaskSpec& worker = job.spec.tasks[1];
  ASSERT_TRUE(worker.partition_policy.has_value());
  EXPECT_EQ(worker.partition_policy->total_partitions, 2);
  EXPECT_EQ(worker.partition_policy->network_topology->highest_tier_allowed, 1);
  EXPECT_EQ(worker.depends_on->name, std::vector<std::string>{"master"});
  EXPECT_EQ(job.spec.policies[1].exit_code, 137);
  EXPECT_EQ(job.spec.policies[2].timeout, "10m");
  EXPECT_EQ(job.spec.volumes[1].volume_claim->storage_class_name, "fast");
  EXPECT_EQ(job.status.state.phase, kJobPhaseRunning);
  EXPECT_EQ(job.status.task_status_count.at("worker").phase.at("Running"), 4);
  EXPECT_EQ(job.status.conditions.size(), 2u);
  EXPECT_FALSE(job.spec.tasks[0].template_.spec.containers[0].env[1].value_from.is_null());
}

TEST(CodecTest, QueueManifest) {
  CheckTestdata<Queue>("queue.json", 8);
  Queue q = *FromJson<Queue>(LoadTestdata("queue.json"));
  EXPECT_EQ(q.spec.capability.at("cpu").Value(), 1000);
  EXPECT_EQ(q.spec.guarantee.resource.at("memory").ToString(), "512Gi");
  EXPECT_EQ(q.spec.affinity->node_group_affinity->required_during_scheduling_ignored_during_execution[0], "gpu-pool");
  EXPECT_EQ(q.spec.extend_clusters[0].weight, 2);
  EXPECT_EQ(q.status.state, kQueueStateOpen);
  EXPECT_EQ(Queue::Resource().namespaced, false);
}

TEST(CodecTest, PodGroupManifest) {
  CheckTestdata<PodGroup>("podgroup.json", 8);
  PodGroup pg = *FromJson<PodGroup>(LoadTestdata("podgroup.json"));
  EXPECT_EQ(pg.spec.min_task_member.at("worker"), 4);
  EXPECT_EQ(pg.spec.min_resources->at("nvidia.com/gpu").Value(), 40);
  EXPECT_EQ(pg.spec.sub_group_policy[0].sub_group_size, 2);
  EXPECT_EQ(pg.status.conditions[0].transition_id, "a1b2");
  EXPECT_TRUE(pg.metadata.ControllerRef() != nullptr);
}

TEST(CodecTest, JobFlowManifest) {
  CheckTestdata<JobFlow>("jobflow.json", 15);
  JobFlow f = *FromJson<JobFlow>(LoadTestdata("jobflow.json"));
  EXPECT_EQ(f.spec.flows[2].depends_on->probe->http_get_list[0].port, 8080);
  EXPECT_EQ(f.spec.flows[3].patch->job_spec.tasks[0].name, "push");
  EXPECT_EQ(f.status.conditions.at("pipeline-prepare").running_duration, "10m0s");
  EXPECT_EQ(f.status.state.phase, kFlowPhaseRunning);
}

TEST(CodecTest, JobTemplateManifest) {
  CheckTestdata<JobTemplate>("jobtemplate.json", 6);
  JobTemplate t = *FromJson<JobTemplate>(LoadTestdata("jobtemplate.json"));
  EXPECT_EQ(t.status.job_depends_on_list[0], "pipeline-train");
  EXPECT_EQ(JobTemplate::Resource().plural, "jobtemplates");
}

TEST(CodecTest, CommandManifest) {
  CheckTestdata<Command>("command.json", 4);
  Command c = *FromJson<Command>(LoadTestdata("command.json"));
  EXPECT_EQ(c.action, kActionAbortJob);
  EXPECT_EQ(c.target->name, "lm-mpi-job");
  EXPECT_EQ(Command::Resource().ApiVersion(), "bus.volcano.sh/v1alpha1");
}

TEST(CodecTest, HyperNodeManifest) {
  CheckTestdata<HyperNode>("hypernode.json", 10);
  HyperNode h = *FromJson<HyperNode>(LoadTestdata("hypernode.json"));
  EXPECT_EQ(h.spec.tier, 2);
  EXPECT_EQ(h.spec.members[1].selector.regex_match->pattern, "^leaf-1[0-9]$");
  EXPECT_EQ(h.spec.members[2].selector.label_match->match_expressions[0].values.size(), 2u);
  EXPECT_EQ(h.status.node_count, 48);
  EXPECT_EQ(h.status.conditions[0].observed_generation, 3);
}

TEST(CodecTest, PodManifest) {
  CheckTestdata<Pod>("pod.json", 25);
  Pod p = *FromJson<Pod>(LoadTestdata("pod.json"));
  EXPECT_EQ(p.status.phase, kPodFailed);
  ASSERT_EQ(p.status.container_statuses.size(), 1u);
  EXPECT_EQ(p.status.container_statuses[0].state.terminated->exit_code, 137);
  EXPECT_EQ(p.status.container_statuses[0].restart_count, 2);
  EXPECT_EQ(p.status.container_statuses[0].started, false);
  EXPECT_EQ(p.spec.priority, 1000);
  EXPECT_EQ(p.spec.tolerations[0].toleration_seconds, 300);
  EXPECT_EQ(p.metadata.annotations.at(std::string(kPodGroupAnnotation)),
            "pytorch-ddp-7f3c2a10-0c1d-4f55-9e8e-2b1f3a4c5d6e");
  EXPECT_EQ(p.spec.volumes[0].config_map->default_mode, 420);
  // A typical server pod leaves only genuinely unmodeled fields in extra.
  EXPECT_TRUE(p.status.extra.is_null());
  EXPECT_TRUE(p.status.container_statuses[0].extra.is_null());
}

TEST(CodecTest, NodeManifest) {
  CheckTestdata<Node>("node.json", 8);
  Node n = *FromJson<Node>(LoadTestdata("node.json"));
  EXPECT_TRUE(n.spec.unschedulable);
  EXPECT_EQ(n.spec.taints[1].time_added, "2026-11-20T11:00:00Z");
  EXPECT_EQ(n.status.allocatable.at("cpu").MilliValue(), 127500);
  EXPECT_EQ(n.status.addresses[0].address, "10.0.3.17");
  EXPECT_EQ(n.status.conditions[0].type, kNodeReady);
}

TEST(CodecTest, DropUnknownClearsExtrasButKeepsModeledFields) {
  json doc = LoadTestdata("pod.json");
  doc["spec"]["containers"][0]["resources"]["claims"] = json::array();
  Pod p = *FromJson<Pod>(doc);
  EXPECT_FALSE(p.metadata.extra.is_null());  // managedFields
  DropUnknown(&p);
  json out = ToJson(p);
  EXPECT_FALSE(out["metadata"].contains("managedFields"));
  EXPECT_FALSE(out["spec"]["containers"][0].contains("terminationMessagePath"));
  EXPECT_FALSE(out["spec"]["containers"][0]["resources"].contains("claims"));
  EXPECT_FALSE(out["spec"].contains("enableServiceLinks"));
  EXPECT_FALSE(out["spec"].contains("volumes"));  // configMap + projected: not PVCs
  EXPECT_FALSE(out["spec"]["containers"][0].contains("env"));
  EXPECT_FALSE(out["spec"]["containers"][0].contains("volumeMounts"));
  EXPECT_FALSE(out["status"].contains("podIPs"));
  EXPECT_EQ(out["status"]["containerStatuses"][0]["imageID"], "");  // written empty: no omitempty in Go
  // Everything a scheduler or controller reads survives.
  EXPECT_EQ(out["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  EXPECT_EQ(out["status"]["containerStatuses"][0]["lastState"]["terminated"]["finishedAt"], "2026-11-20T10:19:00Z");
  EXPECT_EQ(out["status"]["containerStatuses"][0]["restartCount"], 2);
  EXPECT_EQ(out["spec"]["nodeName"], "gpu-node-17");
  EXPECT_EQ(out["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(out["spec"]["containers"][0]["ports"][0]["containerPort"], 23456);
  EXPECT_EQ(out["spec"]["tolerations"][0]["key"], "node.kubernetes.io/not-ready");
  EXPECT_EQ(out["metadata"]["annotations"]["scheduling.k8s.io/group-name"], p.metadata.annotations.at("scheduling.k8s.io/group-name"));
  EXPECT_EQ(out["status"]["conditions"].size(), 3u);
  // PVC volumes are kept.
  json with_pvc = LoadTestdata("pod.json");
  with_pvc["spec"]["volumes"].push_back(J(R"({"name":"data","persistentVolumeClaim":{"claimName":"imagenet"}})"));
  Pod q = *FromJson<Pod>(with_pvc);
  DropUnknown(&q);
  ASSERT_EQ(q.spec.volumes.size(), 1u);
  EXPECT_EQ(q.spec.volumes[0].persistent_volume_claim->claim_name, "imagenet");

  Node n = *FromJson<Node>(LoadTestdata("node.json"));
  DropUnknown(&n);
  json nout = ToJson(n);
  EXPECT_FALSE(nout["status"].contains("images"));
  EXPECT_FALSE(nout["status"].contains("nodeInfo"));
  EXPECT_EQ(nout["status"]["allocatable"]["nvidia.com/gpu"], "8");
}

TEST(CodecTest, CoreKindsRoundTripWithUnknownFields) {
  struct Case {
    const char* name;
    std::function<StatusOr<json>(const json&)> rt;
    const char* doc;
    int min_positions;
  };
  const Case cases[] = {
      {"Service", RoundTrip<Service>,
       R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"job1","namespace":"ns"},
           "spec":{"clusterIP":"None","selector":{"volcano.sh/job-name":"job1"},"publishNotReadyAddresses":true,
                   "ports":[{"name":"p","port":80,"targetPort":"http","protocol":"TCP"}],"sessionAffinity":"None"},
           "status":{"loadBalancer":{}}})",
       4},
      {"ConfigMap", RoundTrip<ConfigMap>,
       R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"job1-svc"},
           "data":{"worker.host":"a.job1\nb.job1","VC_WORKER_NUM":"2"},"binaryData":{"b":"AAE="},"immutable":false})",
       2},
      {"Secret", RoundTrip<Secret>,
       R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"job1-ssh"},"type":"Opaque",
           "data":{"config":"U3RyaWN0SG9zdEtleUNoZWNraW5nIG5v"}})",
       2},
      {"NetworkPolicy", RoundTrip<NetworkPolicy>,
       R"({"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"job1"},
           "spec":{"podSelector":{"matchLabels":{"volcano.sh/job-name":"job1"}},"policyTypes":["Ingress"],
                   "ingress":[{"from":[{"podSelector":{"matchLabels":{"volcano.sh/job-name":"job1"}}},
                                       {"namespaceSelector":{}}]}]}})",
       5},
      {"PersistentVolumeClaim", RoundTrip<PersistentVolumeClaim>,
       R"({"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"job1-pvc-abc"},
           "spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"10Gi"}},"storageClassName":"",
                   "volumeMode":"Filesystem","dataSource":{"kind":"VolumeSnapshot","name":"s"}},
           "status":{"phase":"Bound","capacity":{"storage":"10Gi"}}})",
       4},
      {"Event", RoundTrip<Event>,
       R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"job1.1234","namespace":"ns"},
           "involvedObject":{"kind":"Job","namespace":"ns","name":"job1","uid":"u","apiVersion":"batch.volcano.sh/v1alpha1"},
           "reason":"ExecuteAction","message":"Start to execute action RestartJob","source":{"component":"vc-controller-manager"},
           "firstTimestamp":"2026-11-20T10:00:00Z","lastTimestamp":"2026-11-20T10:00:00Z","count":1,"type":"Normal",
           "reportingComponent":"","reportingInstance":""})",
       4},
      {"PriorityClass", RoundTrip<PriorityClass>,
       R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"high-priority"},
           "value":1000,"description":"training","preemptionPolicy":"Never"})",
       2},
      {"Lease", RoundTrip<Lease>,
       R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"tephra-controller","namespace":"kube-system"},
           "spec":{"holderIdentity":"host-1_abc","leaseDurationSeconds":15,"acquireTime":"2026-11-20T10:00:00.000000Z",
                   "renewTime":"2026-11-20T10:00:10.123456Z","leaseTransitions":0}})",
       3},
      {"Namespace", RoundTrip<Namespace>,
       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ml","annotations":{"scheduling.volcano.sh/queue-name":"research"}},
           "spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}})",
       3},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json doc = J(c.doc);
    StatusOr<json> out = c.rt(doc);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(*out, doc) << json::diff(doc, *out).dump();
    int preserved = 0;
    ForEachObject(doc, json::json_pointer(), [&](const json::json_pointer& p) {
      json m = doc;
      m[p]["zzUnknownField"] = J(R"({"a":[1,2]})");
      StatusOr<json> o = c.rt(m);
      if (!o.ok()) return;
      EXPECT_EQ(*o, m) << "lost at " << p.to_string();
      if (*o == m) ++preserved;
    });
    EXPECT_GE(preserved, c.min_positions);
  }
}

TEST(CodecTest, TypeErrorsNameThePathAndNeverThrow) {
  json doc = LoadTestdata("mpi_job.json");
  doc["spec"]["tasks"][1]["replicas"] = "two";
  StatusOr<Job> job = FromJson<Job>(doc);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_EQ(job.status().message(), "spec.tasks[1].replicas: expected integer, got string");

  json pod = LoadTestdata("pod.json");
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "12x";
  StatusOr<Pod> p = FromJson<Pod>(pod);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "spec.containers[0].resources.requests[cpu]: quantity \"12x\": unknown suffix \"x\"");
  json labels = LoadTestdata("pod.json");
  labels["metadata"]["labels"]["a b"] = 1;  // a key with a space still yields a readable message
  EXPECT_EQ(FromJson<Pod>(labels).status().message(), "metadata.labels[a b]: expected string, got number");
  EXPECT_EQ(FromJson<Pod>(J(R"({"spec": 3})")).status().message(), "spec: expected object, got number");

  EXPECT_FALSE(FromJson<Job>(J("[1,2]")).ok());
  EXPECT_FALSE(FromJson<Pod>(J(R"({"spec":{"containers":{}}})")).ok());
  EXPECT_FALSE(FromJson<Pod>(J(R"({"spec":{"priority":4294967296}})")).ok());
}

TEST(CodecTest, QuantitiesDecodeFromStringsAndNumbers) {
  ResourceList rl;
  ASSERT_TRUE(Decode(J(R"({"cpu": 2, "memory": "1Gi", "x": 0.5, "y": 1e3})"), &rl).ok());
  EXPECT_EQ(rl.at("cpu").ToString(), "2");
  EXPECT_EQ(rl.at("x").ToString(), "500m");
  EXPECT_EQ(rl.at("y").Value(), 1000);
  json out;
  Encode(rl, &out);
  // Unlike Go, which re-parses the raw number text, nlohmann has already turned 1e3 into the double 1000.0,
  // so the exponent form is not recoverable and the value is written in DecimalSI.
  EXPECT_EQ(out, J(R"({"cpu": "2", "memory": "1Gi", "x": "500m", "y": "1k"})"));
  EXPECT_FALSE(Decode(J(R"({"cpu": true})"), &rl).ok());
}

TEST(CodecTest, OmitEmptyFollowsGoTags) {
  // Zero-valued omitempty fields vanish; fields Go writes without omitempty stay.
  ContainerStatus cs;
  cs.name = "c";
  EXPECT_EQ(ToJson(cs), J(R"({"name":"c","ready":false,"restartCount":0,"image":"","imageID":""})"));
  ContainerStateTerminated t;
  EXPECT_EQ(ToJson(t), J(R"({"exitCode":0})"));
  PodSpec ps;
  EXPECT_EQ(ToJson(ps), J(R"({"containers":[]})"));
  TaskSpec task;
  task.min_available = 0;  // *int32 set to 0 is written
  EXPECT_EQ(ToJson(task), J(R"({"minAvailable":0,"template":{"spec":{"containers":[]}}})"));
  Job job;
  EXPECT_EQ(ToJson(job), J(R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job"})"));
}

TEST(CodecTest, UnknownEnumValuesRoundTrip) {
  json doc = LoadTestdata("pytorch_job.json");
  doc["status"]["state"]["phase"] = "Hibernating";
  doc["spec"]["policies"][0]["action"] = "FutureAction";
  StatusOr<json> out = RoundTrip<Job>(doc);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, doc);
}

TEST(CodecTest, ObjectListDecodes) {
  json list = J(R"({"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"42","continue":"abc"},"items":[]})");
  list["items"].push_back(LoadTestdata("pod.json"));
  StatusOr<ObjectList<Pod>> l = FromJson<ObjectList<Pod>>(list);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->metadata.resource_version, "42");
  EXPECT_EQ(l->metadata.continue_token, "abc");
  ASSERT_EQ(l->items.size(), 1u);
  EXPECT_EQ(l->items[0].metadata.name, "pytorch-ddp-worker-0");
}

TEST(CodecTest, ResourceInfoForEveryKind) {
  EXPECT_EQ(Job::Resource().ApiVersion(), "batch.volcano.sh/v1alpha1");
  EXPECT_EQ(Job::Resource().plural, "jobs");
  EXPECT_EQ(PodGroup::Resource().ApiVersion(), "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(HyperNode::Resource().namespaced, false);
  EXPECT_EQ(JobFlow::Resource().plural, "jobflows");
  EXPECT_EQ(Pod::Resource().ApiVersion(), "v1");
  EXPECT_EQ(Node::Resource().namespaced, false);
  EXPECT_EQ(NetworkPolicy::Resource().ApiVersion(), "networking.k8s.io/v1");
  EXPECT_EQ(PriorityClass::Resource().ApiVersion(), "scheduling.k8s.io/v1");
  EXPECT_EQ(Lease::Resource().ApiVersion(), "coordination.k8s.io/v1");
  EXPECT_EQ(PersistentVolumeClaim::Resource().plural, "persistentvolumeclaims");
  EXPECT_EQ(Event::Resource().kind, "Event");
}

TEST(IndirectTest, BehavesLikeOptional) {
  Indirect<ContainerStateTerminated> a;
  EXPECT_FALSE(a.has_value());
  EXPECT_TRUE(a == std::nullopt);
  a.emplace().exit_code = 3;
  ASSERT_TRUE(a);
  Indirect<ContainerStateTerminated> b = a;  // deep copy
  b->exit_code = 4;
  EXPECT_EQ(a->exit_code, 3);
  EXPECT_EQ((*b).exit_code, 4);
  a = ContainerStateTerminated{};
  EXPECT_EQ(a.value().exit_code, 0);
  a = std::nullopt;
  EXPECT_FALSE(a);
  Indirect<ContainerStateTerminated> c = std::move(b);
  EXPECT_EQ(c->exit_code, 4);
  c.reset();
  EXPECT_FALSE(c.has_value());
  EXPECT_LE(sizeof(Indirect<ContainerStateTerminated>), sizeof(void*));
}

TEST(CodecTest, Base64RoundTrip) {
  for (const std::string& s : std::vector<std::string>{"", "f", "fo", "foo", "foob", "fooba", "foobar", std::string("\0\xff\x10", 3)}) {
    std::string e = Base64Encode(s);
    StatusOr<std::string> d = Base64Decode(e);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_FALSE(Base64Decode("Zm9").ok());
  EXPECT_FALSE(Base64Decode("Zm=v").ok());
  EXPECT_FALSE(Base64Decode("Z!9v").ok());
}

TEST(CodecTest, LabelSelectorMatches) {
  LabelSelector s = *FromJson<LabelSelector>(J(
      R"({"matchLabels":{"a":"1"},"matchExpressions":[{"key":"b","operator":"In","values":["x","y"]},
          {"key":"c","operator":"DoesNotExist"}]})"));
  EXPECT_TRUE(Matches(s, {{"a", "1"}, {"b", "y"}}));
  EXPECT_FALSE(Matches(s, {{"a", "1"}, {"b", "z"}}));
  EXPECT_FALSE(Matches(s, {{"a", "1"}, {"b", "x"}, {"c", ""}}));
  EXPECT_TRUE(Matches(LabelSelector{}, {}));
}

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Issue 41: 200,000 nested arrays must be refused without recursion, by both parsers.
TEST(CodecTest, ParseJsonRefusesDeepDocumentsWithoutRecursing) {
  const std::string deep = Nested(200000);
  EXPECT_FALSE(ParseJson(deep).ok());
  EXPECT_FALSE(ParseJson(std::string(200000, '[')).ok());
  auto p = ParseJsonPruned(deep, 512, 2);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->pruned.size(), 1u);
  EXPECT_FALSE(ParseJsonPruned(std::string(200000, '['), 512).ok());
}

// A LIST whose second item holds a 600-deep array: the other items are intact, and the pruned place is named.
TEST(CodecTest, ParseJsonPrunedNamesTheItemThatIsTooDeep) {
  const std::string list = R"({"metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"},"spec":{"x":[1,2]}},)"
                           R"({"metadata":{"name":"b"},"spec":{"template":)" + Nested(600) + R"(}},)"
                           R"({"metadata":{"name":"c"}}]})";
  EXPECT_FALSE(ParseJson(list).ok());
  auto p = ParseJsonPruned(list, 512, 2);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->pruned.size(), 1u);
  EXPECT_EQ(p->pruned[0], (std::vector<std::string>{"items", "1"}));
  const json& items = p->value["items"];
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0], J(R"({"metadata":{"name":"a"},"spec":{"x":[1,2]}})"));
  EXPECT_EQ(items[1]["metadata"]["name"], "b");
  EXPECT_EQ(items[2]["metadata"]["name"], "c");
  EXPECT_EQ(p->value["metadata"]["resourceVersion"], "7");
  // Nothing too deep: the same document as ParseJson's.
  auto same = ParseJsonPruned(R"({"a":[{"b":{"c":[1,"x",null,true,2.5]}}],"d":-3})", 512);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->pruned.empty());
  EXPECT_EQ(same->value, *ParseJson(R"({"a":[{"b":{"c":[1,"x",null,true,2.5]}}],"d":-3})"));
  EXPECT_FALSE(ParseJsonPruned(R"({"a":)", 512).ok());
}

}  // namespace
}  // namespace tephra::api
