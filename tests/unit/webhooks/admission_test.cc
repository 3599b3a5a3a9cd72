// The webhook's HTTP exchange and every endpoint: decoding hostile bodies, Volcano's messages, patches that
// apply to the object as the user wrote it.
#include "tephra/webhooks/admission.h"

#include <gtest/gtest.h>

#include "handlers.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/defaults.h"
#include "tephra/webhooks/configurations.h"

namespace tephra::webhooks {
namespace {

using api::json;

api::FakeClusterLookup Cluster() {
  api::FakeClusterLookup l;
  l.AddQueue("root", "", "Open").AddQueue("default", "root").AddQueue("closed", "root", "Closed");
  l.namespace_annotations["team-a"] = {{"scheduling.volcano.sh/queue-name", "team-a-queue"}};
  return l;
}

json Review(const std::string& kind, const std::string& op, const json& object, const json& old = nullptr,
            const std::string& version = "admission.k8s.io/v1") {
  json r = {{"uid", "u-1"}, {"kind", {{"group", ""}, {"version", "v1"}, {"kind", kind}}}, {"operation", op},
            {"name", object.is_object() && object.contains("metadata") ? object["metadata"].value("name", "") : ""},
            {"namespace", "ns"}};
  if (!object.is_null()) r["object"] = object;
  if (!old.is_null()) r["oldObject"] = old;
  return {{"apiVersion", version}, {"kind", "AdmissionReview"}, {"request", r}};
}

struct Answer {
  int status = 0;
  json review;  // parsed body when 200
  std::string text;
};

class AdmissionTest : public ::testing::Test {
 protected:
  Answer Post(const std::string& path, const std::string& body, const std::string& ct = "application/json") {
    Admitter a(config_, &lookup_, all_);
    HttpReply r = a.Serve(path, ct, body);
    Answer out{r.status, nullptr, r.body};
    if (r.status == 200) out.review = json::parse(r.body);
    return out;
  }
  json Respond(const std::string& path, const json& review) {
    Answer a = Post(path, review.dump());
    EXPECT_EQ(a.status, 200) << a.text;
    return a.review["response"];
  }
  // Applies the response's patch to `object` as the API server would.
  json Patched(const json& resp, const json& object) {
    if (!resp.contains("patch")) return object;
    EXPECT_EQ(resp["patchType"], "JSONPatch");
    auto text = api::Base64Decode(resp["patch"].get<std::string>());
    EXPECT_TRUE(text.ok());
    auto applied = api::ApplyJsonPatch(object, json::parse(*text));
    EXPECT_TRUE(applied.ok()) << applied.status().ToString();
    return applied.ok() ? *applied : object;
  }

  WebhookConfig config_;
  api::FakeClusterLookup lookup_ = Cluster();
  std::set<std::string> all_ = [] {
    std::set<std::string> s;
    for (const auto& e : Endpoints()) s.emplace(e.path);
    return s;
  }();
};

// The issue's job: one task of 3 replicas, nothing else.
json BareJob() {
  return json::parse(R"({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
    "metadata": {"name": "bare", "namespace": "ns"},
    "spec": {"tasks": [{"replicas": 3, "template": {"spec": {"containers": [
      {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1000m"}}}]}}}]}})");
}

// ---------------------------------------------------------------------------------------------- envelope

TEST_F(AdmissionTest, HostileBodiesAreRefusedWithWhatIsWrong) {
  struct Case {
    std::string body, want;
  } cases[] = {
      {"", "not an AdmissionReview"},
      {"{", "not an AdmissionReview"},
      {"[]", "must be a JSON object"},
      {R"({"kind": "Pod", "apiVersion": "admission.k8s.io/v1"})", "kind must be AdmissionReview"},
      {R"({"kind": "AdmissionReview", "apiVersion": "v1"})", "apiVersion must be admission.k8s.io/v1"},
      {R"({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"})", "request is missing"},
      {R"({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"operation": "CREATE"}})",
       "request.uid is missing"},
      {R"({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"uid": 7}})",
       "request.uid must be a string"},
      {R"({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"uid": "x",
          "operation": "CREATE", "object": "s"}})", "request.object must be an object"},
      {std::string(10000, '[') + std::string(10000, ']'), "nested deeper than 128"},
  };
  for (const auto& c : cases) {
    Answer a = Post("/jobs/validate", c.body);
    EXPECT_EQ(a.status, 400) << c.body.substr(0, 80);
    EXPECT_NE(a.text.find(c.want), std::string::npos) << a.text;
  }
}

TEST_F(AdmissionTest, WrongContentTypeAndUnknownPathsAreHttpErrors) {
  std::string body = Review("Job", "CREATE", BareJob()).dump();
  EXPECT_EQ(Post("/jobs/validate", body, "text/plain").status, 400);
  EXPECT_EQ(Post("/jobs/validate", body, "application/json; charset=utf-8").status, 200);
  EXPECT_EQ(Post("/jobs/explode", body).status, 404);
  Admitter only_jobs(config_, &lookup_, {"/jobs/mutate"});
  EXPECT_EQ(only_jobs.Serve("/jobs/validate", "application/json", body).status, 404);
}

TEST_F(AdmissionTest, AnswerEchoesUidAndReviewVersion) {
  for (std::string v : {"admission.k8s.io/v1", "admission.k8s.io/v1beta1"}) {
    Answer a = Post("/jobs/mutate", Review("Job", "CREATE", BareJob(), nullptr, v).dump());
    ASSERT_EQ(a.status, 200);
    EXPECT_EQ(a.review["apiVersion"], v);
    EXPECT_EQ(a.review["kind"], "AdmissionReview");
    EXPECT_EQ(a.review["response"]["uid"], "u-1");
    EXPECT_EQ(a.review["response"]["allowed"], true);
  }
}

TEST_F(AdmissionTest, KindThatDoesNotBelongToThePathIsDenied) {
  json resp = Respond("/jobs/validate", Review("Pod", "CREATE", json::object()));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_EQ(resp["status"]["message"], "/jobs/validate admits Job objects, got kind Pod");
}

TEST_F(AdmissionTest, ObjectOfTheWrongShapeIsDeniedNamingTheField) {
  json job = BareJob();
  job["spec"]["tasks"][0]["replicas"] = "three";
  json resp = Respond("/jobs/validate", Review("Job", "CREATE", job));
  EXPECT_EQ(resp["allowed"], false);
  std::string msg = resp["status"]["message"];
  EXPECT_NE(msg.find("cannot decode Job"), std::string::npos) << msg;
  EXPECT_NE(msg.find("replicas"), std::string::npos) << msg;
}

// --------------------------------------------------------------------------------------------------- jobs

TEST_F(AdmissionTest, JobMutateAppliesVolcanoDefaultsAsAPatchToTheRawObject) {
  json raw = BareJob();
  json resp = Respond("/jobs/mutate", Review("Job", "CREATE", raw));
  ASSERT_EQ(resp["allowed"], true);
  json out = Patched(resp, raw);
  EXPECT_EQ(out["spec"]["queue"], "default");
  EXPECT_EQ(out["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(out["spec"]["maxRetry"], 3);
  EXPECT_EQ(out["spec"]["minAvailable"], 3);
  EXPECT_EQ(out["spec"]["tasks"][0]["name"], "default0");
  EXPECT_EQ(out["spec"]["tasks"][0]["minAvailable"], 3);
  EXPECT_EQ(out["spec"]["tasks"][0]["maxRetry"], 3);
  // Only what the defaults fill changes: the user's "1000m" is not rewritten.
  EXPECT_EQ(out["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1000m");
  // Idempotent: the defaulted object needs no patch.
  json again = Respond("/jobs/mutate", Review("Job", "CREATE", out));
  EXPECT_FALSE(again.contains("patch")) << again.dump();
}

TEST_F(AdmissionTest, JobMutateUsesTheFirstSchedulerNameAndAddsImpliedPlugins) {
  config_.scheduler_names = {"tephra", "volcano"};
  json raw = BareJob();
  raw["spec"]["plugins"] = {{"mpi", json::array({"--master=default0"})}};
  json out = Patched(Respond("/jobs/mutate", Review("Job", "CREATE", raw)), raw);
  EXPECT_EQ(out["spec"]["schedulerName"], "tephra");
  EXPECT_TRUE(out["spec"]["plugins"].contains("svc"));
  EXPECT_TRUE(out["spec"]["plugins"].contains("ssh"));
  EXPECT_EQ(out["spec"]["plugins"]["mpi"], json::array({"--master=default0"}));
}

TEST_F(AdmissionTest, JobMutateRefusesOtherOperationsWithVolcanosText) {
  json resp = Respond("/jobs/mutate", Review("Job", "UPDATE", BareJob(), BareJob()));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_EQ(resp["status"]["message"], "expect operation to be 'CREATE' ");
}

TEST_F(AdmissionTest, JobValidateDeniesVolcanosInvalidExamplesWithTheirMessages) {
  json defaulted = Patched(Respond("/jobs/mutate", Review("Job", "CREATE", BareJob())), BareJob());
  EXPECT_EQ(Respond("/jobs/validate", Review("Job", "CREATE", defaulted))["allowed"], true);

  json no_tasks = defaulted;
  no_tasks["spec"]["tasks"] = json::array();
  EXPECT_EQ(Respond("/jobs/validate", Review("Job", "CREATE", no_tasks))["status"]["message"],
            "spec.tasks: No task specified in job spec");

  json closed = defaulted;
  closed["spec"]["queue"] = "closed";
  EXPECT_EQ(Respond("/jobs/validate", Review("Job", "CREATE", closed))["status"]["message"],
            "spec.queue: can only submit job to queue with state `Open`, queue `closed` status is `Closed`");

  json missing = defaulted;
  missing["spec"]["queue"] = "nope";
  EXPECT_EQ(Respond("/jobs/validate", Review("Job", "CREATE", missing))["status"]["message"],
            "spec.queue: unable to find job queue: nope");

  // Every problem at once, each with its path.
  json two = defaulted;
  two["spec"]["tasks"][0]["minAvailable"] = 5;
  two["spec"]["plugins"] = {{"nope", json::array()}};
  std::string msg = Respond("/jobs/validate", Review("Job", "CREATE", two))["status"]["message"];
  EXPECT_NE(msg.find("spec.tasks[0].minAvailable: 'minAvailable' is greater than 'replicas' in task: default0, job: "
                     "bare"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("spec.plugins[nope]: unable to find job plugin: nope"), std::string::npos) << msg;
}

TEST_F(AdmissionTest, JobUpdateMayScaleButNotChangeTheTemplate) {
  json job = Patched(Respond("/jobs/mutate", Review("Job", "CREATE", BareJob())), BareJob());
  json scaled = job;
  scaled["spec"]["tasks"][0]["replicas"] = 4;
  EXPECT_EQ(Respond("/jobs/validate", Review("Job", "UPDATE", scaled, job))["allowed"], true);
  json changed = job;
  changed["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["image"] = "other";
  json resp = Respond("/jobs/validate", Review("Job", "UPDATE", changed, job));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find("job updates may not change fields other than"),
            std::string::npos);
  EXPECT_EQ(Respond("/jobs/validate", Review("Job", "DELETE", job))["status"]["message"],
            "expect operation to be 'CREATE' or 'UPDATE'");
}

// ------------------------------------------------------------------------------------------------- queues

TEST_F(AdmissionTest, QueueMutateDefaultsWeightAndReclaimable) {
  json raw = json::parse(R"({"metadata": {"name": "q1"}, "spec": {}})");
  json out = Patched(Respond("/queues/mutate", Review("Queue", "CREATE", raw)), raw);
  EXPECT_EQ(out["spec"]["weight"], 1);
  EXPECT_EQ(out["spec"]["reclaimable"], true);
  EXPECT_EQ(Respond("/queues/mutate", Review("Queue", "DELETE", raw))["status"]["message"],
            "invalid operation `DELETE`, expect operation to be `CREATE`");
}

TEST_F(AdmissionTest, QueueValidateRefusesDeletingDefaultAndRoot) {
  json def = json::parse(R"({"metadata": {"name": "default"}, "spec": {"weight": 1}})");
  json resp = Respond("/queues/validate", Review("Queue", "DELETE", nullptr, def));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find("`default` queue can not be deleted"),
            std::string::npos);
  json other = json::parse(R"({"metadata": {"name": "closed"}, "spec": {"weight": 1}})");
  EXPECT_EQ(Respond("/queues/validate", Review("Queue", "DELETE", nullptr, other))["allowed"], true);
}

TEST_F(AdmissionTest, QueueValidateChecksGuaranteeAgainstDeserved) {
  json q = json::parse(R"({"metadata": {"name": "q2"}, "spec": {"weight": 1,
      "guarantee": {"resource": {"cpu": "4"}}, "deserved": {"cpu": "2"}}})");
  json resp = Respond("/queues/validate", Review("Queue", "CREATE", q));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find("must be >= guarantee"), std::string::npos)
      << resp.dump();
}

// ---------------------------------------------------------------------------------------------- podgroups

TEST_F(AdmissionTest, PodGroupMutateTakesTheNamespaceQueue) {
  json raw = json::parse(R"({"metadata": {"name": "pg", "namespace": "team-a"}, "spec": {"queue": "default",
      "minMember": 2}})");
  json out = Patched(Respond("/podgroups/mutate", Review("PodGroup", "CREATE", raw)), raw);
  EXPECT_EQ(out["spec"]["queue"], "team-a-queue");
  EXPECT_EQ(out["metadata"], raw["metadata"]);
  json elsewhere = raw;
  elsewhere["metadata"]["namespace"] = "team-b";
  EXPECT_FALSE(Respond("/podgroups/mutate", Review("PodGroup", "CREATE", elsewhere)).contains("patch"));
}

TEST_F(AdmissionTest, PodGroupValidateRefusesAClosedQueue) {
  json pg = json::parse(R"({"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"queue": "closed"}})");
  json resp = Respond("/podgroups/validate", Review("PodGroup", "CREATE", pg));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find("queue `closed` status is `Closed`"),
            std::string::npos);
  EXPECT_EQ(Respond("/podgroups/validate", Review("PodGroup", "UPDATE", pg, pg))["status"]["message"],
            "unsupported operation UPDATE");
}

// --------------------------------------------------------------------------------------------------- pods

TEST_F(AdmissionTest, PodsOfOtherSchedulersPassWithoutBeingDecoded) {
  // A spec that would not decode: never looked at, because the pod is not ours.
  json theirs = json::parse(R"({"metadata": {"name": "p", "annotations": {"volcano.sh/jdb-min-available": "1",
      "volcano.sh/jdb-max-unavailable": "1"}}, "spec": {"schedulerName": "default-scheduler", "containers": 7}})");
  EXPECT_EQ(Respond("/pods/validate", Review("Pod", "CREATE", theirs))["allowed"], true);
  EXPECT_EQ(Respond("/pods/mutate", Review("Pod", "CREATE", theirs))["allowed"], true);
  json ours = theirs;
  ours["spec"] = {{"schedulerName", "volcano"}, {"containers", json::array()}};
  json resp = Respond("/pods/validate", Review("Pod", "CREATE", ours));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find("not allow configure multiple annotations"),
            std::string::npos);
  ours["metadata"]["annotations"] = {{"volcano.sh/jdb-min-available", "100%"}};
  EXPECT_NE(Respond("/pods/validate", Review("Pod", "CREATE", ours))["status"]["message"].get<std::string>().find(
                "it must be a valid percentage which between 1% ~ 99%"),
            std::string::npos);
}

// -------------------------------------------------------------------------------- jobflows and hypernodes

TEST_F(AdmissionTest, JobFlowWithACycleIsNotADag) {
  json flow = json::parse(R"({"metadata": {"name": "f", "namespace": "ns"}, "spec": {"flows": [
      {"name": "a", "dependsOn": {"targets": ["b"]}}, {"name": "b", "dependsOn": {"targets": ["a"]}}]}})");
  json resp = Respond("/jobflows/validate", Review("JobFlow", "CREATE", flow));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find("jobflow Flow is not DAG"), std::string::npos);
}

TEST_F(AdmissionTest, HyperNodeWithoutMembersIsDenied) {
  json hn = json::parse(R"({"metadata": {"name": "s0"}, "spec": {"tier": 1, "members": []}})");
  json resp = Respond("/hypernodes/validate", Review("HyperNode", "CREATE", hn));
  EXPECT_EQ(resp["allowed"], false);
  EXPECT_NE(resp["status"]["message"].get<std::string>().find("member must have at least one member"),
            std::string::npos)
      << resp.dump();
}

// ----------------------------------------------------------------------------------------------- cronjobs

TEST(CronScheduleTest, StandardFiveFieldsAndDescriptors) {
  for (std::string ok : {"*/5 * * * *", "0 0 * * *", "0 9-17 * * MON-FRI", "15,45 */2 1 JAN,jul 0", "5/10 * * * *",
                         "? * * * *", "@hourly", "@every 1h30m", "@every 500ms", "0 0 1-31/2 * sun"}) {
    EXPECT_EQ(CronScheduleError(ok), "") << ok;
  }
  struct Case {
    std::string spec, want;
  } bad[] = {{"* * * *", "expected exactly 5 fields"},
             {"60 * * * *", "above maximum (59)"},
             {"* * 0 * *", "below minimum (1)"},
             {"5-1 * * * *", "beyond end of range"},
             {"*/0 * * * *", "should be a positive number"},
             {"1/2/3 * * * *", "too many slashes"},
             {"a * * * *", "failed to parse int from a"},
             {"* * * * 7", "above maximum (6)"},
             {"@fortnightly", "unrecognized descriptor"},
             {"@every 1x", "failed to parse duration"}};
  for (const auto& c : bad) EXPECT_NE(CronScheduleError(c.spec).find(c.want), std::string::npos) << c.spec;
}

TEST(CronScheduleTest, TimeZones) {
  EXPECT_EQ(TimeZoneError("UTC"), "");
  EXPECT_EQ(TimeZoneError("Europe/Berlin"), "");
  EXPECT_EQ(TimeZoneError(""), "timeZone must be nil or non-empty string, got empty string");
  EXPECT_EQ(TimeZoneError("local"), "timeZone can't be Local, and must be defined in https://www.iana.org/time-zones");
  EXPECT_EQ(TimeZoneError("../etc/passwd"), "unknown timeZone ../etc/passwd");
  EXPECT_EQ(TimeZoneError("Mars/Olympus"), "invalid timeZone Mars/Olympus");
}

TEST_F(AdmissionTest, CronJobValidateJoinsEveryProblem) {
  json cj = json::parse(R"({"metadata": {"name": "nightly"}, "spec": {"schedule": "0 3 * * *",
      "timeZone": "Asia/Tokyo", "jobTemplate": {"spec": {"tasks": []}}}})");
  EXPECT_EQ(Respond("/cronjobs/validate", Review("CronJob", "CREATE", cj))["allowed"], true);
  json bad = cj;
  bad["spec"]["schedule"] = "CRON_TZ=UTC 0 3 * * *";
  bad["spec"]["timeZone"] = "";
  bad["metadata"]["name"] = std::string(53, 'a');
  std::string msg = Respond("/cronjobs/validate", Review("CronJob", "CREATE", bad))["status"]["message"];
  EXPECT_NE(msg.find("spec.schedule: schedule should not contain TZ or CRON_TZ"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spec.timeZone: timeZone must be nil or non-empty string"), std::string::npos) << msg;
  EXPECT_NE(msg.find("metadata.name: cronJob name must be no more than 52 characters"), std::string::npos) << msg;
  bad = cj;
  bad["spec"]["schedule"] = "";
  EXPECT_EQ(Respond("/cronjobs/validate", Review("CronJob", "CREATE", bad))["status"]["message"],
            "spec.schedule: schedule is required, but got empty");
}

// ------------------------------------------------------------------------------------------ configuration

TEST(EnabledAdmissionTest, DefaultsAndUnknownPaths) {
  auto d = ParseEnabledAdmission("");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (std::set<std::string>{"/jobs/mutate", "/jobs/validate", "/queues/mutate", "/queues/validate",
                                       "/podgroups/mutate", "/pods/mutate", "/pods/validate"}));
  auto two = ParseEnabledAdmission("/jobs/mutate, /cronjobs/validate");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::set<std::string>{"/jobs/mutate", "/cronjobs/validate"}));
  auto bad = ParseEnabledAdmission("/jobs/mutate,/job/validate");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown path \"/job/validate\""), std::string::npos);
}

TEST(ConfigurationsTest, FailurePoliciesUrlsAndSelectors) {
  ConfigurationOptions o;
  o.webhook_url = "https://127.0.0.1:9443/";
  o.ca_bundle_pem = "PEM";
  o.service_namespace = "tephra-system";
  o.scheduler_names = {"volcano"};
  auto cfgs = BuildConfigurations(o, {"/jobs/mutate", "/jobs/validate", "/pods/validate"});
  ASSERT_EQ(cfgs.size(), 3u);
  EXPECT_EQ(cfgs[0]["kind"], "MutatingWebhookConfiguration");
  EXPECT_EQ(cfgs[0]["metadata"]["name"], "volcano-admission-service-jobs-mutate");
  const json& m = cfgs[0]["webhooks"][0];
  EXPECT_EQ(m["name"], "mutatejob.volcano.sh");
  EXPECT_EQ(m["clientConfig"]["url"], "https://127.0.0.1:9443/jobs/mutate");
  EXPECT_EQ(m["clientConfig"]["caBundle"], api::Base64Encode("PEM"));
  EXPECT_EQ(m["failurePolicy"], "Ignore");  // the controller applies the same defaults
  EXPECT_EQ(m["sideEffects"], "None");
  EXPECT_EQ(m["namespaceSelector"]["matchExpressions"][0]["values"], json({"kube-system", "tephra-system"}));
  EXPECT_EQ(cfgs[1]["webhooks"][0]["failurePolicy"], "Fail");
  EXPECT_EQ(cfgs[1]["webhooks"][0]["rules"][0]["operations"], json({"CREATE", "UPDATE"}));
  const json& pods = cfgs[2]["webhooks"][0];
  EXPECT_EQ(pods["failurePolicy"], "Ignore");  // never block the cluster's pods
  EXPECT_FALSE(pods.contains("matchConditions"));
  o.match_conditions = true;
  o.webhook_url.clear();
  cfgs = BuildConfigurations(o, {"/pods/validate"});
  EXPECT_EQ(cfgs[0]["webhooks"][0]["matchConditions"][0]["expression"],
            "has(object.spec.schedulerName) && object.spec.schedulerName in ['volcano']");
  EXPECT_EQ(cfgs[0]["webhooks"][0]["matchConditions"][1]["name"], "tephra-jdb-annotations");
  EXPECT_EQ(cfgs[0]["webhooks"][0]["clientConfig"]["service"]["path"], "/pods/validate");
}

}  // namespace
}  // namespace tephra::webhooks
