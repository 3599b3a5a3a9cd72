// `tephra ctl` / vcctl commands against the in-memory FakeClient: exact (golden) output of the vcctl tables,
// flags and defaults, usage errors, the Commands suspend/resume/operate create, -o json|yaml.
// Goldens were produced from vcctl's Go format strings (pkg/cli/*/list.go), not from this implementation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tephra/api/kinds.h"
#include "tephra/ctl/ctl.h"
#include "tephra/ctl/output.h"
#include "tephra/kube/yaml.h"
#include "testing/fake_client.h"

namespace tephra::ctl {
namespace {

using api::json;
using ::testing::HasSubstr;
using std::chrono::seconds;

// "Now" for every test: 2023-11-14T22:13:20Z. Objects are seeded with creation times before it.
constexpr int64_t kNow = 1'700'000'000;
constexpr int64_t kOldest = 100'000;  // seconds before kNow the fake clock starts

class CtlTest : public ::testing::Test {
 protected:
  CtlTest() : clock_(core::Clock::WallTime(seconds(kNow - kOldest))), fake_(std::make_shared<kube::testing::FakeClient>(&clock_)) {}

  // Stores obj with creationTimestamp `ago` seconds before kNow (calls must come oldest first).
  json SeedAgo(const api::ResourceInfo& r, const json& obj, int64_t ago) {
    auto target = core::Clock::WallTime(seconds(kNow - ago));
    clock_.Advance(target - clock_.WallNow());
    return fake_->Seed(r, obj);
  }
  void AtNow() { clock_.Advance(core::Clock::WallTime(seconds(kNow)) - clock_.WallNow()); }

  int Run(std::vector<std::string> args) {
    out_.str("");
    err_.str("");
    Env env;
    env.out = &out_;
    env.err = &err_;
    env.clock = &clock_;
    env.connect = [this](const ConnectionFlags& f) -> core::StatusOr<Connection> {
      flags_ = f;
      ++connects_;
      return Connection{fake_, "https://test:6443"};
    };
    args.insert(args.begin(), "vcctl");
    return Main(args, env);
  }

  std::vector<kube::testing::Action> Writes() {
    std::vector<kube::testing::Action> w;
    for (auto& a : fake_->Actions())
      if (a.verb == "create" || a.verb == "patch" || a.verb == "delete" || a.verb == "update") w.push_back(a);
    return w;
  }

  void SeedJobs() {
    SeedAgo(api::Job::Resource(), json::parse(R"({
      "metadata": {"name": "etl-nightly-2023", "namespace": "team-b", "labels": {"volcano.sh/job-type": "Spark"}},
      "spec": {"queue": "etl", "tasks": [{"name": "t", "replicas": 4}]},
      "status": {"state": {"phase": "Completed"}, "minAvailable": 4, "succeeded": 4}})"),
            80001);  // 2023-11-13T23:59:59Z
    SeedAgo(api::Job::Resource(), json::parse(R"({
      "metadata": {"name": "train", "namespace": "default"},
      "spec": {"queue": "default", "schedulerName": "volcano", "minAvailable": 3,
               "tasks": [{"name": "ps", "replicas": 1}, {"name": "worker", "replicas": 2}]},
      "status": {"state": {"phase": "Running"}, "minAvailable": 3, "running": 3, "retryCount": 1}})"),
            44000);  // 2023-11-14T10:00:00Z
    AtNow();
  }

  core::FakeClock clock_;
  std::shared_ptr<kube::testing::FakeClient> fake_;
  std::ostringstream out_, err_;
  ConnectionFlags flags_;
  int connects_ = 0;
};

// ------------------------------------------------------------------------------------------------ job list

TEST_F(CtlTest, JobListGolden) {
  SeedJobs();
  ASSERT_EQ(Run({"job", "list"}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "Name    Creation       Phase       JobType     Replicas    Min   Pending   Running   Succeeded   Failed    "
            "Unknown     RetryCount\n"
            "train   2023-11-14     Running     Batch       3           3     0         3         0           0         "
            "0           1         \n");
}

TEST_F(CtlTest, JobListAllNamespacesGolden) {
  SeedJobs();
  ASSERT_EQ(Run({"job", "list", "--all-namespaces"}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "Namespace   Name               Creation       Phase       JobType     Replicas    Min   Pending   Running   "
            "Succeeded   Failed    Unknown     RetryCount\n"
            "default     train              2023-11-14     Running     Batch       3           3     0         3         "
            "0           0         0           1         \n"
            "team-b      etl-nightly-2023   2023-11-13     Completed   Spark       4           4     0         0         "
            "4           0         0           0         \n");
}

TEST_F(CtlTest, JobListFiltersAndEmpty) {
  SeedJobs();
  ASSERT_EQ(Run({"job", "list", "--all-namespaces", "-q", "etl"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("etl-nightly-2023"));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("train")));
  ASSERT_EQ(Run({"job", "list", "--all-namespaces", "--selector", "rai"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("train"));
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("etl")));
  ASSERT_EQ(Run({"job", "list", "-n", "nobody"}), 0);
  EXPECT_EQ(out_.str(), "No resources found\n");
}

TEST_F(CtlTest, JobListJsonAndYaml) {
  SeedJobs();
  ASSERT_EQ(Run({"job", "list", "-o", "json"}), 0);
  json j = json::parse(out_.str());
  EXPECT_EQ(j["kind"], "List");
  ASSERT_EQ(j["items"].size(), 1u);
  EXPECT_EQ(j["items"][0]["kind"], "Job");
  EXPECT_EQ(j["items"][0]["apiVersion"], "batch.volcano.sh/v1alpha1");
  EXPECT_EQ(j["items"][0]["metadata"]["name"], "train");

  ASSERT_EQ(Run({"job", "view", "-N", "train", "-o", "yaml"}), 0);
  auto docs = kube::YamlDocumentsToJson(out_.str(), "out");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0]["spec"]["tasks"][1]["replicas"], 2);
  EXPECT_EQ((*docs)[0]["status"]["state"]["phase"], "Running");
}

TEST_F(CtlTest, JobListWideAddsColumns) {
  SeedJobs();
  // The start estimate comes from the job's PodGroup "<job>-<uid>" (docs/reservations.md).
  auto train = fake_->Get(api::Job::Resource(), "default", "train");
  ASSERT_TRUE(train.ok());
  fake_->Seed(api::PodGroup::Resource(), json{{"metadata", {{"name", "train-" + train->at("metadata").value("uid", "")},
                                                         {"namespace", "default"}}},
                                          {"spec", {{"minMember", 3}}},
                                          {"status", {{"phase", "Inqueue"},
                                                      {"conditions", json::array({{{"type", "Queued"},
                                                                                   {"status", "True"},
                                                                                   {"message", "position 1 in queue default; estimated start 2023-11-14T23:00:00Z (reserved on 3 node(s))"}}})}}}});
  ASSERT_EQ(Run({"job", "list", "-o", "wide"}), 0);
  std::string first = out_.str().substr(0, out_.str().find('\n'));
  EXPECT_THAT(first, HasSubstr("RetryCount"));
  EXPECT_THAT(first, HasSubstr("Queue"));
  EXPECT_THAT(first, HasSubstr("EstimatedStart"));
  EXPECT_THAT(out_.str(), HasSubstr("2023-11-14T23:00:00Z"));
}

// ------------------------------------------------------------------------------------------------ job view

TEST_F(CtlTest, JobViewGolden) {
  SeedAgo(api::Job::Resource(), json::parse(R"({
    "metadata": {"name": "v", "namespace": "default", "labels": {"a": "b"}},
    "spec": {"schedulerName": "volcano", "minAvailable": 1, "plugins": {"env": [], "ssh": ["--no-root"]},
             "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {"restartPolicy": "Never",
               "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c"],
                               "ports": [{"containerPort": 80, "name": "http"}],
                               "resources": {"requests": {"cpu": "1000m", "memory": "100Mi"}}}]}}}]},
    "status": {"state": {"phase": "Pending"}, "pending": 1, "minAvailable": 1,
               "conditions": [{"status": "Pending", "lastTransitionTime": "2023-11-14T22:12:00Z"}]}})"),
          120);
  SeedAgo(api::Event::Resource(), json::parse(R"({
    "metadata": {"name": "v.17a", "namespace": "default"}, "type": "Normal", "reason": "Scheduled",
    "message": " pods scheduled ", "count": 1, "firstTimestamp": "2023-11-14T22:12:50Z",
    "source": {"component": "vc-scheduler"}})"),
          30);
  SeedAgo(api::Event::Resource(), json::parse(R"({"metadata": {"name": "vv.1", "namespace": "default"},
    "type": "Warning", "reason": "Other"})"),
          20);
  AtNow();
  ASSERT_EQ(Run({"job", "view", "-N", "v"}), 0) << err_.str();
  const std::string want =
      "Name:       \tv\n"
      "Namespace:  \tdefault\n"
      "Labels:     \t{\"a\":\"b\"}\n"
      "Annotations:\t<none>\n"
      "API Version:\tbatch.volcano.sh/v1alpha1\n"
      "Kind:       \tJob\n"
      "Metadata:\n"
      "  Creation Timestamp:\t2023-11-14 22:11:20 +0000 UTC\n"
      "  Generate Name:     \t\n"
      "  Generation:        \t1\n"
      "  Resource Version:  \t1\n"
      "  UID:               \tfake-uid-1\n"
      "Spec:\n"
      "  Min Available:     \t1\n"
      "  Plugins:\n"
      "    Env:\t[]\n"
      "    Ssh:\t[--no-root]\n"
      "  Scheduler Name:    \tvolcano\n"
      "  Tasks:\n"
      "    Name:\tt\n"
      "    Replicas:\t1\n"
      "    Template:\n"
      "      Metadata:\n"
      "        Annotations:\n"
      "          Cri . Cci . Io / Container - Type:          \t\n"
      "          Kubernetes . Io / Availablezone:            \t\n"
      "          Network . Alpha . Kubernetes . Io / Network:\t\n"
      "        Creation Timestamp:\t0001-01-01 00:00:00 +0000 UTC\n"
      "      Spec:\n"
      "        Containers:\n"
      "          Command:\n"
      "            sh\n"
      "            -c\n"
      "          Image:\tbusybox\n"
      "          Name: \tc\n"
      "          Ports:\n"
      "            Container Port:\t80\n"
      "            Name:          \thttp\n"
      "          Resources:\n"
      "            Limits:\n"
      "              Cpu:   \t0\n"
      "              Memory:\t0\n"
      "            Requests:\n"
      "              Cpu:   \t1\n"
      "              Memory:\t100Mi\n"
      "            Working Dir:\t\n"
      "        Image Pull Secrets:\n"
      "        Restart Policy:   \tNever\n"
      "Status:\n"
      "  Pending:      \t1\n"
      "  Min Available:\t1\n"
      "  State:\n"
      "    Phase:\tPending\n"
      "  Conditions:\n"
      "    Status\tTransitionTime\n"
      "    Pending \t2023-11-14 22:12:00 +0000 UTC \n"
      "Events:\n"
      "Type           \tReason                                  \tAge                           \tForm                   "
      "                 \tMessage\n"
      "-------        \t-------                                 \t-------                       \t-------                "
      "                 \t-------\n"
      "Normal         \tScheduled                               \t30s                           \tvc-scheduler           "
      "                 \tpods scheduled\n";
  EXPECT_EQ(out_.str(), want);
}

TEST_F(CtlTest, JobViewNeedsNameAndExplainsNotFound) {
  EXPECT_EQ(Run({"job", "view"}), kExitUsage);
  EXPECT_EQ(err_.str(), "Failed to view job: job name (specified by --name or -N) is mandatory to view a particular job\n");
  EXPECT_EQ(connects_, 0) << "usage errors are reported before connecting";
  EXPECT_EQ(Run({"job", "view", "-N", "x"}), kExitError);
  EXPECT_EQ(err_.str(), "Failed to view job: job default/x not found\n");
}

// ----------------------------------------------------------------------------------------- queue list / get

class QueueTest : public CtlTest {
 protected:
  void SeedQueues() {
    fake_->Seed(api::Queue::Resource(), json::parse(R"({"metadata": {"name": "default"}, "spec": {"weight": 1},
                                                       "status": {"state": "Open"}})"));
    fake_->Seed(api::Queue::Resource(), json::parse(R"({"metadata": {"name": "research"},
      "spec": {"weight": 4, "parent": "root", "reclaimable": false}, "status": {"state": "Closed"}})"));
    auto pg = [&](const char* ns, const char* name, const char* queue, const char* phase) {
      fake_->Seed(api::PodGroup::Resource(), json{{"metadata", {{"name", name}, {"namespace", ns}}},
                                                  {"spec", {{"queue", queue}, {"minMember", 1}}},
                                                  {"status", {{"phase", phase}}}});
    };
    pg("default", "pg1", "default", "Running");
    pg("default", "pg2", "default", "Pending");
    pg("other", "pg5", "default", "Unknown");
    pg("default", "pg3", "research", "Inqueue");
    pg("default", "pg4", "research", "Completed");
    pg("default", "pg6", "gone", "Running");
  }
};

TEST_F(QueueTest, ListGolden) {
  SeedQueues();
  ASSERT_EQ(Run({"queue", "list"}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "Name                     Weight  State   Parent  Inqueue Pending Running Unknown Completed\n"
            "default                  1       Open            0       1       1       1       0       \n"
            "research                 4       Closed  root    1       0       0       0       1       \n");
}

TEST_F(QueueTest, GetGoldenAndYaml) {
  SeedQueues();
  ASSERT_EQ(Run({"queue", "get", "-n", "research"}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "Name                     Weight  State   Parent  Inqueue Pending Running Unknown Completed\n"
            "research                 4       Closed  root    1       0       0       0       1       \n");
  ASSERT_EQ(Run({"queue", "get", "-n", "research", "-o", "yaml"}), 0);
  EXPECT_EQ(out_.str(),
            "apiVersion: scheduling.volcano.sh/v1beta1\n"
            "kind: Queue\n"
            "metadata:\n"
            "  creationTimestamp: \"2023-11-13T18:26:40Z\"\n"
            "  generation: 1\n"
            "  name: research\n"
            "  resourceVersion: \"2\"\n"
            "  uid: fake-uid-2\n"
            "spec:\n"
            "  parent: root\n"
            "  reclaimable: false\n"
            "  weight: 4\n"
            "status:\n"
            "  state: Closed\n");
  EXPECT_EQ(Run({"queue", "get", "-n", "nope"}), kExitError);
  EXPECT_EQ(err_.str(), "Failed to get queue: queue nope not found\n");
  EXPECT_EQ(Run({"queue", "get"}), kExitUsage);
}

TEST_F(QueueTest, CreateDefaultsLikeVcctl) {
  ASSERT_EQ(Run({"queue", "create"}), 0) << err_.str();
  auto w = Writes();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].body["metadata"]["name"], "test");
  EXPECT_EQ(w[0].body["spec"]["weight"], 1);
  EXPECT_EQ(w[0].body["status"]["state"], "Open");
  ASSERT_EQ(Run({"queue", "create", "-n", "q2", "-w", "7", "-S", "Closed"}), 0);
  EXPECT_EQ(Writes().back().body["spec"]["weight"], 7);
}

TEST_F(QueueTest, OperateOpenCloseCreateCommandsUpdatePatches) {
  SeedQueues();
  fake_->ClearActions();
  ASSERT_EQ(Run({"queue", "operate", "-n", "research", "-a", "open"}), 0) << err_.str();
  ASSERT_EQ(Run({"queue", "operate", "-n", "research", "-a", "close"}), 0) << err_.str();
  ASSERT_EQ(Run({"queue", "operate", "-n", "research", "-a", "update", "-w", "9"}), 0) << err_.str();
  auto w = Writes();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].verb, "create");
  EXPECT_EQ(w[0].ns, "default");
  const json ref = {{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "Queue"}, {"name", "research"},
                    {"uid", "fake-uid-2"}, {"controller", true}, {"blockOwnerDeletion", true}};
  EXPECT_EQ(w[0].body, (json{{"apiVersion", "bus.volcano.sh/v1alpha1"},
                             {"kind", "Command"},
                             {"metadata",
                              {{"generateName", "research-openqueue-"},
                               {"namespace", "default"},
                               {"ownerReferences", json::array({ref})}}},
                             {"target", ref},
                             {"action", "OpenQueue"}}));
  EXPECT_EQ(w[1].body["action"], "CloseQueue");
  EXPECT_EQ(w[1].body["metadata"]["generateName"], "research-closequeue-");
  EXPECT_EQ(w[2].verb, "patch");
  EXPECT_EQ(w[2].body, (json{{"spec", {{"weight", 9}}}}));

  EXPECT_EQ(Run({"queue", "operate", "-n", "research", "-a", "update"}), kExitUsage);
  EXPECT_EQ(err_.str(), "Failed to operate queue: when update queue research, weight must be specified, the value must "
                        "be greater than 0\n");
  EXPECT_EQ(Run({"queue", "operate", "-n", "research"}), kExitUsage);
  EXPECT_EQ(err_.str(), "Failed to operate queue: action can not be null\n");
  EXPECT_EQ(Run({"queue", "operate", "-n", "research", "-a", "drain"}), kExitUsage);
  EXPECT_EQ(err_.str(), "Failed to operate queue: action drain invalid, valid actions are open, close and update\n");
  fake_->ClearActions();
  EXPECT_EQ(Run({"queue", "operate", "-n", "root", "-a", "close"}), kExitUsage);
  EXPECT_EQ(err_.str(), "Failed to operate queue: the root queue cannot be closed: every queue is under it\n");
  EXPECT_TRUE(Writes().empty()) << "no Command is created";
}

// ------------------------------------------------------------------------------------ suspend / resume / run

TEST_F(CtlTest, SuspendAndResumeCreateCommandsLikeVcctl) {
  SeedJobs();
  fake_->ClearActions();
  ASSERT_EQ(Run({"job", "suspend", "-N", "train"}), 0) << err_.str();
  ASSERT_EQ(Run({"job", "resume", "-n", "default", "--name", "train"}), 0) << err_.str();
  auto w = Writes();
  ASSERT_EQ(w.size(), 2u);
  const json ref = {{"apiVersion", "batch.volcano.sh/v1alpha1"}, {"kind", "Job"}, {"name", "train"},
                    {"uid", "fake-uid-2"}, {"controller", true}, {"blockOwnerDeletion", true}};
  EXPECT_EQ(w[0].resource, "commands.bus.volcano.sh");
  EXPECT_EQ(w[0].ns, "default");
  EXPECT_EQ(w[0].body, (json{{"apiVersion", "bus.volcano.sh/v1alpha1"},
                             {"kind", "Command"},
                             {"metadata",
                              {{"generateName", "train-abortjob-"},
                               {"namespace", "default"},
                               {"ownerReferences", json::array({ref})}}},
                             {"target", ref},
                             {"action", "AbortJob"}}));
  EXPECT_EQ(w[1].body["action"], "ResumeJob");
  EXPECT_EQ(w[1].body["metadata"]["generateName"], "train-resumejob-");
  EXPECT_EQ(out_.str(), "");

  EXPECT_EQ(Run({"job", "suspend"}), kExitUsage);
  EXPECT_EQ(err_.str(), "Failed to suspend job: job name is mandatory to suspend a particular job\n");
  EXPECT_EQ(Run({"job", "resume", "-N", "nope"}), kExitError);
  EXPECT_EQ(err_.str(), "Failed to resume job: job default/nope not found\n");
}

TEST_F(CtlTest, RunFromFlagsUsesVcctlDefaults) {
  ASSERT_EQ(Run({"job", "run", "-N", "j1"}), 0) << err_.str();
  EXPECT_EQ(out_.str(), "run job j1 successfully\n");
  auto w = Writes();
  ASSERT_EQ(w.size(), 1u);
  const json& b = w[0].body;
  EXPECT_EQ(w[0].ns, "default");
  EXPECT_EQ(b["spec"]["minAvailable"], 1);
  EXPECT_EQ(b["spec"]["schedulerName"], "volcano");
  const json& t = b["spec"]["tasks"][0];
  EXPECT_EQ(t["replicas"], 1);
  EXPECT_EQ(t["template"]["metadata"]["labels"]["job.volcano.sh"], "j1");
  EXPECT_EQ(t["template"]["spec"]["restartPolicy"], "Never");
  const json& c = t["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "busybox");
  EXPECT_EQ(c["imagePullPolicy"], "IfNotPresent");
  EXPECT_EQ(c["resources"]["requests"], (json{{"cpu", "1"}, {"memory", "100Mi"}}));
  EXPECT_EQ(c["resources"]["limits"], (json{{"cpu", "1"}, {"memory", "100Mi"}}));

  EXPECT_EQ(Run({"job", "run"}), kExitUsage);
  EXPECT_EQ(err_.str(), "Failed to run job: job name cannot be left blank\n");
  EXPECT_EQ(Run({"job", "run", "-N", "j2", "-R", "cpu"}), kExitError);
  EXPECT_THAT(err_.str(), HasSubstr("invalid argument syntax cpu, expected <resource>=<value>"));
}

TEST_F(CtlTest, RunFromFileKeepsItsNamespaceUnlessGiven) {
  std::string path = ::testing::TempDir() + "/ctl_run_test.yaml";
  {
    std::ofstream f(path);
    f << "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: a, namespace: team-a}\n"
         "spec: {minAvailable: 1, tasks: [{replicas: 1, name: t}], unknownField: {keep: yes}}\n"
         "---\n"
         "{\"apiVersion\": \"batch.volcano.sh/v1alpha1\", \"kind\": \"Job\", \"metadata\": {\"generateName\": \"b-\"}}\n";
  }
  ASSERT_EQ(Run({"job", "run", "-f", path, "-o", "name"}), 0) << err_.str();
  auto w = Writes();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].ns, "team-a");
  EXPECT_EQ(w[0].body["spec"]["unknownField"]["keep"], true) << "the manifest is sent as written";
  EXPECT_EQ(w[1].ns, "default");
  EXPECT_THAT(out_.str(), ::testing::MatchesRegex("a\nb-.+\n"));
  fake_->ClearActions();
  ASSERT_EQ(Run({"job", "run", "-f", path, "-n", "override"}), 0) << err_.str();
  EXPECT_EQ(Writes()[0].ns, "override");
  EXPECT_THAT(out_.str(), HasSubstr("run job a successfully\n"));

  {
    std::ofstream f(path);
    f << "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n";
  }
  EXPECT_EQ(Run({"job", "run", "-f", path}), kExitError);
  EXPECT_THAT(err_.str(), HasSubstr(path + ": document 1: expected a batch.volcano.sh Job, got v1 Pod"));
  {
    std::ofstream f(path);
    f << "kind: Job\n---\nmetadata: [unclosed\n";
  }
  EXPECT_EQ(Run({"job", "run", "-f", path}), kExitError);
  EXPECT_THAT(err_.str(), HasSubstr(path + ": document 2: "));
}

TEST_F(CtlTest, DeletePrintsLikeVcctl) {
  SeedJobs();
  ASSERT_EQ(Run({"job", "delete", "-N", "train"}), 0);
  EXPECT_EQ(out_.str(), "delete job train successfully\n");
  EXPECT_EQ(Run({"job", "delete", "-N", "train"}), kExitError);
  EXPECT_EQ(err_.str(), "Failed to delete job: job default/train not found\n");
}

// ------------------------------------------------------------------------------------------------ pod list

TEST_F(CtlTest, PodListGolden) {
  SeedAgo(api::Pod::Resource(), json::parse(R"({
    "metadata": {"name": "p2", "namespace": "default", "labels": {"volcano.sh/job-name": "train"}},
    "spec": {"containers": [{"name": "c"}]},
    "status": {"phase": "Succeeded", "containerStatuses": [{"name": "c", "ready": false, "restartCount": 1,
      "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
      "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2023-11-14T22:11:20Z"}}}]}})"),
          600);
  SeedAgo(api::Pod::Resource(), json::parse(R"({
    "metadata": {"name": "plain", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]},
    "status": {"phase": "Running"}})"),
          400);
  SeedAgo(api::Pod::Resource(), json::parse(R"({
    "metadata": {"name": "p1", "namespace": "default", "labels": {"volcano.sh/job-name": "train"}},
    "spec": {"containers": [{"name": "c"}]},
    "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0,
      "state": {"running": {}}}]}})"),
          300);
  AtNow();
  ASSERT_EQ(Run({"pod", "list"}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "Name      Ready      Status           Restart           Age        \n"
            "p1        1/1        Running          0                 5m         \n"
            "p2        0/1        Completed        1 (2m ago)        10m        \n");
  ASSERT_EQ(Run({"pod", "list", "-j", "other"}), 0);
  EXPECT_EQ(out_.str(), "No resources found\n");
  ASSERT_EQ(Run({"pod", "list", "--all-namespaces", "-j", "train"}), 0);
  EXPECT_EQ(out_.str().substr(0, out_.str().find('\n')),
            "Namespace      Name      Ready      Status           Restart           Age        ");
}

// ------------------------------------------------------------------------------------------------ job logs

TEST_F(CtlTest, JobLogsPrintsEachPodUnderAHeader) {
  SeedJobs();
  auto pod = [&](const char* name, const char* task, const char* node) {
    fake_->Seed(api::Pod::Resource(),
                json{{"metadata",
                      {{"name", name},
                       {"namespace", "default"},
                       {"labels", {{"volcano.sh/job-name", "train"}, {"volcano.sh/task-spec", task}}}}},
                     {"spec", {{"nodeName", node}, {"containers", json::array({{{"name", "main"}}})}}}});
  };
  pod("train-worker-0", "worker", "n1");
  pod("train-ps-0", "ps", "n2");
  std::vector<std::string> paths;
  fake_->SetRawHandler([&](const std::string& method, const std::string& path, const json*) -> core::StatusOr<json> {
    paths.push_back(method + " " + path);
    if (path.find("train-ps-0") != std::string::npos)
      return core::UnavailableError("dial tcp 10.0.0.2:10250: connect: connection refused").WithHttp(500);
    return json("step 1\nstep 2\n");
  });
  EXPECT_EQ(Run({"job", "logs", "train", "--tail", "5"}), kExitError);
  EXPECT_EQ(out_.str(),
            "==> default/train-ps-0 (task ps, container main) <==\n"
            "==> default/train-worker-0 (task worker, container main) <==\n"
            "step 1\nstep 2\n");
  EXPECT_THAT(err_.str(), HasSubstr("could not reach the kubelet of node \"n2\""));
  EXPECT_THAT(paths, ::testing::ElementsAre("GET /api/v1/namespaces/default/pods/train-ps-0/log?container=main&tailLines=5",
                                            "GET /api/v1/namespaces/default/pods/train-worker-0/log?container=main&tailLines=5"));
  fake_->ClearActions();
  EXPECT_EQ(Run({"job", "logs", "-N", "train", "-t", "worker"}), kExitOk) << err_.str();
  bool selected = false;
  for (const auto& a : fake_->Actions()) selected |= a.verb == "list" && a.resource == "pods";
  EXPECT_TRUE(selected);
  EXPECT_THAT(out_.str(), ::testing::Not(HasSubstr("train-ps-0")));
  EXPECT_EQ(Run({"job", "logs", "nope"}), kExitError);
  EXPECT_EQ(err_.str(), "Failed to logs job: job default/nope not found\n");
}

// ------------------------------------------------------------------------------------------- jobflow list

TEST_F(CtlTest, JobFlowListGolden) {
  SeedAgo(api::JobFlow::Resource(),
          json::parse(R"({"metadata": {"name": "b", "namespace": "default"}, "status": {"state": {"phase": "Succeed"}}})"),
          93600);
  SeedAgo(api::JobFlow::Resource(),
          json::parse(R"({"metadata": {"name": "flow-a", "namespace": "default"},
                          "status": {"state": {"phase": "Running"}}})"),
          10800);
  AtNow();
  ASSERT_EQ(Run({"jobflow", "list"}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "Name      Namespace    Phase      Age    \n"
            "b         default      Succeed    26h    \n"
            "flow-a    default      Running    3h     \n");
  ASSERT_EQ(Run({"jobflow", "describe", "-N", "b", "-o", "json"}), 0);
  EXPECT_EQ(json::parse(out_.str())["kind"], "JobFlow");
  ASSERT_EQ(Run({"jobtemplate", "list"}), 0);
  EXPECT_EQ(out_.str(), "No resources found\n");
  // get: one row of the same table; -o yaml the object; a name is mandatory.
  ASSERT_EQ(Run({"jobflow", "get", "-N", "flow-a"}), 0) << err_.str();
  EXPECT_EQ(out_.str(),
            "Name      Namespace    Phase      Age    \n"
            "flow-a    default      Running    3h     \n");
  ASSERT_EQ(Run({"jobflow", "get", "-N", "flow-a", "-o", "yaml"}), 0);
  EXPECT_NE(out_.str().find("kind: JobFlow"), std::string::npos) << out_.str();
  EXPECT_EQ(Run({"jobtemplate", "get"}), kExitUsage);
  EXPECT_NE(err_.str().find("name is mandatory to get the particular job template details"), std::string::npos)
      << err_.str();
  EXPECT_EQ(Run({"jobtemplate", "get", "-N", "nope"}), kExitError);
  EXPECT_NE(err_.str().find("not found"), std::string::npos) << err_.str();
}

// ------------------------------------------------------------------------------------- flags and dispatch

TEST_F(CtlTest, ConnectionFlagsOnEveryCommand) {
  ASSERT_EQ(Run({"queue", "list", "-k", "/tmp/kc", "-s", "https://x:6443"}), 0);
  EXPECT_EQ(flags_.kubeconfig, "/tmp/kc");
  EXPECT_EQ(flags_.master, "https://x:6443");
  ASSERT_EQ(Run({"jobtemplate", "list", "--kubeconfig", "/tmp/k2", "--master", "m"}), 0);
  EXPECT_EQ(flags_.kubeconfig, "/tmp/k2");
  EXPECT_EQ(flags_.master, "m");
}

TEST_F(CtlTest, NamespaceDefaultsToDefault) {
  ASSERT_EQ(Run({"job", "list"}), 0);
  auto actions = fake_->Actions();
  ASSERT_FALSE(actions.empty());
  EXPECT_EQ(actions.back().verb, "list");
  EXPECT_EQ(actions.back().ns, "default");
}

TEST_F(CtlTest, UnknownFlagIsAUsageError) {
  EXPECT_EQ(Run({"job", "list", "--bogus"}), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("--bogus"));
  EXPECT_THAT(err_.str(), HasSubstr("Run with --help"));
  EXPECT_EQ(connects_, 0);
  EXPECT_EQ(Run({"job"}), kExitUsage);
  EXPECT_EQ(Run({"nosuch"}), kExitUsage);
  EXPECT_EQ(Run({"job", "list", "-o", "xml"}), kExitUsage);
  EXPECT_EQ(Run({"job", "list", "--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("--all-namespaces"));
  EXPECT_THAT(out_.str(), HasSubstr("vcctl job list"));
}

TEST(CtlDispatch, VcctlBasename) {
  EXPECT_TRUE(InvokedAsVcctl("vcctl"));
  EXPECT_TRUE(InvokedAsVcctl("/usr/local/bin/vcctl"));
  EXPECT_TRUE(InvokedAsVcctl("./vcctl"));
  EXPECT_FALSE(InvokedAsVcctl("/usr/bin/tephra"));
  EXPECT_FALSE(InvokedAsVcctl("vcctl-1.9"));
  EXPECT_FALSE(InvokedAsVcctl("/opt/vcctl/tephra"));
}

TEST_F(CtlTest, VersionNeedsNoCluster) {
  ASSERT_EQ(Run({"version"}), 0);
  EXPECT_THAT(out_.str(), ::testing::StartsWith("API Version: v1alpha1\nVersion: "));
  EXPECT_EQ(connects_, 0);
}

TEST(CtlOutput, HumanDuration) {
  using std::chrono::hours;
  using std::chrono::minutes;
  EXPECT_EQ(HumanDuration(seconds(-5)), "<invalid>");
  EXPECT_EQ(HumanDuration(seconds(-1)), "0s");
  EXPECT_EQ(HumanDuration(seconds(119)), "119s");
  EXPECT_EQ(HumanDuration(seconds(150)), "2m30s");
  EXPECT_EQ(HumanDuration(minutes(5)), "5m");
  EXPECT_EQ(HumanDuration(minutes(100)), "100m");
  EXPECT_EQ(HumanDuration(hours(3) + minutes(20)), "3h20m");
  EXPECT_EQ(HumanDuration(hours(26)), "26h");
  EXPECT_EQ(HumanDuration(hours(24 * 4 + 5)), "4d5h");
  EXPECT_EQ(HumanDuration(hours(24 * 30)), "30d");
  EXPECT_EQ(HumanDuration(hours(24 * (365 * 3 + 10))), "3y10d");
}

}  // namespace
}  // namespace tephra::ctl
