// Each plugin's exact output (docs/volcano-behaviour.md, "Job plugins") and Go-flag parsing.
#include <gtest/gtest.h>

#include "test_util.h"

namespace tephra::reconcilers::job {
namespace {

using namespace testing;  // NOLINT

JobPluginPtr Make(const std::string& name, std::vector<std::string> args = {}, std::vector<std::string>* log = nullptr) {
  std::vector<std::string> scratch;
  auto p = NewJobPlugin(name, args, log ? log : &scratch);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(p).value();
}

api::Pod PodFor(const api::Job& job, const std::string& task, int index, JobPlugin& plugin,
                kube::KeyGenerator* keys = nullptr) {
  std::vector<JobPluginPtr> none;
  PluginContext ctx;
  ctx.job = &job;
  ctx.key_generator = keys;
  const api::TaskSpec* t = job.spec.FindTask(task);
  api::Pod pod = BuildPod(job, *t, index, none, ctx).value();
  EXPECT_TRUE(plugin.OnPodCreate(ctx, *t, index, &pod).ok());
  return pod;
}

std::string Env(const api::Container& c, const std::string& name) {
  for (const auto& e : c.env)
    if (e.name == name) return e.value;
  return "<unset>";
}

const api::EnvVar* EnvVar(const api::Container& c, const std::string& name) {
  for (const auto& e : c.env)
    if (e.name == name) return &e;
  return nullptr;
}

api::Job WithInit(api::Job job) {
  for (auto& t : job.spec.tasks) {
    api::Container init;
    init.name = "init";
    t.template_.spec.init_containers.push_back(init);
  }
  return job;
}

GoFlagTypes Types() { return {{"port", "master", "worker", "flag"}, {"flag"}, {"port"}}; }

TEST(FlagsTest, GoFlagForms) {
  std::map<std::string, std::string> v;
  EXPECT_EQ(ParseGoFlags({"--port=1", "-master", "m", "--flag", "--worker", "-w"}, Types(), &v), "");
  EXPECT_EQ(v.at("port"), "1");
  EXPECT_EQ(v.at("master"), "m");
  EXPECT_EQ(v.at("worker"), "-w");  // a value flag takes the next word whatever it looks like
  EXPECT_EQ(v.at("flag"), "true");
}

// Go's flag package stops at the first non-flag word, after "--", and at the first error; what was set
// before the stop stays. Volcano's plugins log the error and use those values.
TEST(FlagsTest, ParsingStopsWhereGosFlagPackageStops) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> want;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"--port=1", "bare", "--master=m"}, {{"port", "1"}}, ""},
      {{"--port=1", "--", "--master=m"}, {{"port", "1"}}, ""},
      {{"--port=1", "-", "--master=m"}, {{"port", "1"}}, ""},
      {{"--nope=3", "--master=m"}, {}, "flag provided but not defined: -nope"},
      {{"--master=m", "--nope"}, {{"master", "m"}}, "flag provided but not defined: -nope"},
      {{"--port=abc", "--master=m"}, {}, "invalid value \"abc\" for flag -port"},
      {{"--flag", "false", "--master=m"}, {{"flag", "true"}}, ""},  // bools never take the next word
      {{"--flag=maybe", "--master=m"}, {}, "invalid boolean value \"maybe\" for -flag"},
      {{"--flag=F", "--port", "0x10"}, {{"flag", "false"}, {"port", "0x10"}}, ""},
      {{"--master"}, {}, "flag needs an argument: -master"},
      {{"---port=1"}, {}, "bad flag syntax: ---port=1"},
      {{"-=x"}, {}, "bad flag syntax: -=x"},
  };
  for (const auto& c : cases) {
    std::map<std::string, std::string> v;
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_EQ(ParseGoFlags(c.args, Types(), &v), c.err) << joined;
    EXPECT_EQ(v, c.want) << joined;
  }
}

TEST(FlagsTest, IntsParseLikeStrconvParseIntBaseZero) {
  EXPECT_EQ(ParseGoInt("22"), 22);
  EXPECT_EQ(ParseGoInt("+22"), 22);
  EXPECT_EQ(ParseGoInt("-22"), -22);
  EXPECT_EQ(ParseGoInt("0x1F"), 31);
  EXPECT_EQ(ParseGoInt("0o17"), 15);
  EXPECT_EQ(ParseGoInt("017"), 15);
  EXPECT_EQ(ParseGoInt("0b101"), 5);
  EXPECT_EQ(ParseGoInt("0"), 0);
  EXPECT_EQ(ParseGoInt("1_000"), 1000);
  EXPECT_EQ(ParseGoInt("0x_1f"), 31);
  EXPECT_EQ(ParseGoInt("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseGoInt("-9223372036854775808"), INT64_MIN);
  for (const char* bad : {"", "0x", "0o", "08", "1_", "_1", "1__0", "9223372036854775808", "22a", " 22", "0b2"})
    EXPECT_FALSE(ParseGoInt(bad).has_value()) << bad;
}

TEST(FlagsTest, ParseErrorIsLoggedWithWhereParsingStopped) {
  std::vector<std::string> log;
  auto p = Make("mpi", {"--master=head", "--bogus=1", "--port=2222"}, &log);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0], "plugin mpi: flag provided but not defined: -bogus; the arguments from there on are ignored");
}

TEST(FlagsTest, UnknownPluginIsNotFound) {
  std::vector<std::string> log;
  EXPECT_EQ(NewJobPlugin("ray2", {}, &log).status().code(), core::StatusCode::kNotFound);
}

TEST(EnvPluginTest, TaskIndexInAllContainers) {
  api::Job job = WithInit(MakeJob("j", {Task("worker", 3)}));
  auto p = Make("env");
  api::Pod pod = PodFor(job, "worker", 2, *p);
  EXPECT_EQ(Env(pod.spec.containers[0], "VK_TASK_INDEX"), "2");
  EXPECT_EQ(Env(pod.spec.containers[0], "VC_TASK_INDEX"), "2");
  EXPECT_EQ(Env(pod.spec.init_containers[0], "VC_TASK_INDEX"), "2");
}

TEST(SvcPluginTest, ConfigMapServiceNetworkPolicy) {
  api::Job job = MakeJob("mpi", {Task("master", 1), Task("my-worker", 2)});
  job.spec.tasks[0].template_.spec.hostname = "head";
  auto p = Make("svc", {"--publish-not-ready-addresses=true"});
  PluginObjects out;
  PluginContext ctx;
  ctx.job = &job;
  ASSERT_TRUE(p->Desired(ctx, &out).ok());
  const auto& cm = out.config_maps.at("mpi-svc");
  EXPECT_EQ(cm.data.at("master.host"), "head.mpi");
  EXPECT_EQ(cm.data.at("VC_MASTER_HOSTS"), "head.mpi");
  EXPECT_EQ(cm.data.at("VC_MASTER_NUM"), "1");
  EXPECT_EQ(cm.data.at("my_worker.host"), "mpi-my-worker-0.mpi\nmpi-my-worker-1.mpi");
  EXPECT_EQ(cm.data.at("VC_MY_WORKER_HOSTS"), "mpi-my-worker-0.mpi,mpi-my-worker-1.mpi");
  EXPECT_EQ(cm.data.at("VC_MY_WORKER_NUM"), "2");
  EXPECT_EQ(cm.data.size(), 6u);
  EXPECT_EQ(cm.metadata.owner_references.at(0).uid, "uid-mpi");

  const auto& svc = out.services.at("mpi");
  EXPECT_EQ(svc.spec.cluster_ip, "None");
  EXPECT_TRUE(svc.spec.publish_not_ready_addresses);
  EXPECT_TRUE(svc.spec.ports.empty());
  EXPECT_EQ(svc.spec.selector, (std::map<std::string, std::string>{{"volcano.sh/job-name", "mpi"},
                                                                    {"volcano.sh/job-namespace", "ns"}}));
  const auto& np = out.network_policies.at("mpi");
  EXPECT_EQ(np.spec.pod_selector.match_labels, svc.spec.selector);
  ASSERT_EQ(np.spec.ingress.size(), 1u);
  EXPECT_EQ(np.spec.ingress[0].from.at(0).pod_selector->match_labels, svc.spec.selector);
  EXPECT_EQ(np.spec.policy_types, std::vector<std::string>{"Ingress"});

  PluginObjectNames owned = p->Owned(job);
  EXPECT_EQ(owned.config_maps, std::vector<std::string>{"mpi-svc"});
  EXPECT_EQ(owned.services, std::vector<std::string>{"mpi"});
}

TEST(SvcPluginTest, DisableNetworkPolicy) {
  api::Job job = MakeJob("j", {Task("w", 1)});
  auto p = Make("svc", {"--disable-network-policy=true"});
  PluginObjects out;
  PluginContext ctx;
  ctx.job = &job;
  ASSERT_TRUE(p->Desired(ctx, &out).ok());
  EXPECT_TRUE(out.network_policies.empty());
  EXPECT_FALSE(out.services.at("j").spec.publish_not_ready_addresses);
}

TEST(SvcPluginTest, PodHostnameEnvAndMount) {
  api::Job job = WithInit(MakeJob("j", {Task("ps", 1), Task("worker-a", 2)}));
  auto p = Make("svc");
  api::Pod pod = PodFor(job, "worker-a", 1, *p);
  EXPECT_EQ(pod.spec.hostname, "j-worker-a-1");
  EXPECT_EQ(pod.spec.subdomain, "j");
  const api::EnvVar* e = EnvVar(pod.spec.containers[0], "VC_WORKER_A_HOSTS");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->value_from, api::json::parse(R"({"configMapKeyRef":{"name":"j-svc","key":"VC_WORKER_A_HOSTS"}})"));
  EXPECT_NE(EnvVar(pod.spec.containers[0], "VC_PS_NUM"), nullptr);
  EXPECT_NE(EnvVar(pod.spec.init_containers[0], "VC_PS_NUM"), nullptr);
  ASSERT_EQ(pod.spec.volumes.size(), 1u);
  EXPECT_EQ(pod.spec.volumes[0].name, "j-svc");
  EXPECT_EQ(pod.spec.volumes[0].config_map->name, "j-svc");
  EXPECT_EQ(pod.spec.containers[0].volume_mounts.at(0).mount_path, "/etc/volcano");
  EXPECT_EQ(pod.spec.init_containers[0].volume_mounts.at(0).mount_path, "/etc/volcano");

  auto no_env = Make("svc", {"--inject-hosts-env=false"});
  api::Pod pod2 = PodFor(job, "ps", 0, *no_env);
  EXPECT_EQ(EnvVar(pod2.spec.containers[0], "VC_PS_NUM"), nullptr);
}

TEST(SshPluginTest, SecretLayoutAndConfig) {
  api::Job job = MakeJob("j", {Task("master", 1), Task("worker", 2)});
  FakeKeyGenerator keys;
  auto p = Make("ssh", {"--ssh-port=2222"});
  PluginObjects out;
  PluginContext ctx;
  ctx.job = &job;
  ctx.key_generator = &keys;
  ASSERT_TRUE(p->Desired(ctx, &out).ok());
  const auto& s = out.secrets.at("j-ssh");
  EXPECT_EQ(api::Base64Decode(s.data.at("id_rsa")).value(),
            "-----BEGIN RSA PRIVATE KEY-----\nFAKE\n-----END RSA PRIVATE KEY-----\n");
  EXPECT_EQ(api::Base64Decode(s.data.at("id_rsa.pub")).value(), "ssh-rsa AAAAFAKE\n");
  EXPECT_EQ(api::Base64Decode(s.data.at("authorized_keys")).value(), "ssh-rsa AAAAFAKE\n");
  EXPECT_EQ(api::Base64Decode(s.data.at("config")).value(),
            "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
            "Host j-master-0\n  HostName j-master-0.j\n  Port 2222\n"
            "Host j-worker-0\n  HostName j-worker-0.j\n  Port 2222\n"
            "Host j-worker-1\n  HostName j-worker-1.j\n  Port 2222\n");
  EXPECT_EQ(keys.calls, 1);

  // An existing Secret is kept as is: no new key.
  PluginObjects observed;
  observed.secrets["j-ssh"] = s;
  ctx.observed = &observed;
  PluginObjects again;
  ASSERT_TRUE(p->Desired(ctx, &again).ok());
  EXPECT_EQ(keys.calls, 1);
}

TEST(SshPluginTest, UserKeysAreUsedVerbatim) {
  api::Job job = MakeJob("j", {Task("w", 1)});
  auto p = Make("ssh", {"--ssh-private-key=PRIV", "--ssh-public-key=PUB"});
  PluginObjects out;
  PluginContext ctx;
  ctx.job = &job;
  ASSERT_TRUE(p->Desired(ctx, &out).ok());
  EXPECT_EQ(api::Base64Decode(out.secrets.at("j-ssh").data.at("id_rsa")).value(), "PRIV");
  EXPECT_EQ(api::Base64Decode(out.secrets.at("j-ssh").data.at("authorized_keys")).value(), "PUB");
}

TEST(SshPluginTest, PodVolumeAndMount) {
  api::Job job = WithInit(MakeJob("j", {Task("w", 1)}));
  auto p = Make("ssh");
  api::Pod pod = PodFor(job, "w", 0, *p);
  ASSERT_EQ(pod.spec.volumes.size(), 1u);
  const auto& v = pod.spec.volumes[0];
  EXPECT_EQ(v.name, "j-ssh");
  EXPECT_EQ(v.secret->secret_name, "j-ssh");
  EXPECT_EQ(v.secret->default_mode, 0600);
  ASSERT_EQ(v.secret->items.size(), 4u);
  EXPECT_EQ(v.secret->items[0].key, "id_rsa");
  EXPECT_EQ(v.secret->items[0].path, ".ssh/id_rsa");
  EXPECT_EQ(v.secret->items[3].path, ".ssh/config");
  const auto& m = pod.spec.containers[0].volume_mounts.at(0);
  EXPECT_EQ(m.mount_path, "/root/.ssh");
  EXPECT_EQ(m.sub_path, ".ssh");
  EXPECT_EQ(pod.spec.init_containers[0].volume_mounts.at(0).name, "j-ssh");

  auto custom = Make("ssh", {"--ssh-key-file-path=/home/u/.ssh"});
  api::Pod pod2 = PodFor(job, "w", 0, *custom);
  EXPECT_EQ(pod2.spec.volumes[0].secret->default_mode, 0644);
  EXPECT_EQ(pod2.spec.containers[0].volume_mounts.at(0).mount_path, "/home/u/.ssh");
}

TEST(PytorchPluginTest, RanksWorldSizeMasterAddr) {
  api::Job job = MakeJob("pt", {Task("master", 1), Task("worker", 3)});
  auto p = Make("pytorch", {"--port=29500"});
  api::Pod m = PodFor(job, "master", 0, *p);
  api::Pod w = PodFor(job, "worker", 2, *p);
  for (const auto* pod : {&m, &w}) {
    EXPECT_EQ(Env(pod->spec.containers[0], "MASTER_ADDR"), "pt-master-0.pt");
    EXPECT_EQ(Env(pod->spec.containers[0], "MASTER_PORT"), "29500");
    EXPECT_EQ(Env(pod->spec.containers[0], "WORLD_SIZE"), "4");
    ASSERT_EQ(pod->spec.containers[0].ports.size(), 1u);
    EXPECT_EQ(pod->spec.containers[0].ports[0].name, "pytorchjob-port");
    EXPECT_EQ(pod->spec.containers[0].ports[0].container_port, 29500);
  }
  EXPECT_EQ(Env(m.spec.containers[0], "RANK"), "0");
  EXPECT_EQ(Env(w.spec.containers[0], "RANK"), "3");
  EXPECT_TRUE(w.spec.init_containers.empty());
}

TEST(PytorchPluginTest, NoMasterTaskIsNoop) {
  api::Job job = MakeJob("pt", {Task("worker", 2)});
  auto p = Make("pytorch");
  api::Pod w = PodFor(job, "worker", 0, *p);
  EXPECT_EQ(Env(w.spec.containers[0], "RANK"), "<unset>");
}

TEST(PytorchPluginTest, WaitForMasterInitContainer) {
  api::Job job = MakeJob("pt", {Task("master", 1), Task("worker", 1)});
  auto p = Make("pytorch", {"--wait-master-enabled", "--wait-master-timeout=60"});
  api::Pod w = PodFor(job, "worker", 0, *p);
  ASSERT_EQ(w.spec.init_containers.size(), 1u);
  EXPECT_EQ(w.spec.init_containers[0].name, "wait-for-master");
  EXPECT_EQ(w.spec.init_containers[0].image, "busybox:1.36.1");
  EXPECT_NE(w.spec.init_containers[0].command.at(2).find("timeout 60"), std::string::npos);
  EXPECT_NE(w.spec.init_containers[0].command.at(2).find("pt-master-0.pt 23456"), std::string::npos);
  EXPECT_TRUE(PodFor(job, "master", 0, *p).spec.init_containers.empty());
}

TEST(MpiPluginTest, MasterGetsWorkerHostsAllGetPort) {
  api::Job job = WithInit(MakeJob("mpi", {Task("master", 1), Task("worker", 2)}));
  auto p = Make("mpi");
  api::Pod m = PodFor(job, "master", 0, *p);
  api::Pod w = PodFor(job, "worker", 1, *p);
  EXPECT_EQ(Env(m.spec.containers[0], "MPI_HOST"), "mpi-worker-0.mpi,mpi-worker-1.mpi");
  EXPECT_EQ(Env(m.spec.init_containers[0], "MPI_HOST"), "mpi-worker-0.mpi,mpi-worker-1.mpi");
  EXPECT_EQ(Env(w.spec.containers[0], "MPI_HOST"), "<unset>");
  for (const auto* pod : {&m, &w}) {
    ASSERT_EQ(pod->spec.containers[0].ports.size(), 1u);
    EXPECT_EQ(pod->spec.containers[0].ports[0].name, "mpijob-port");
    EXPECT_EQ(pod->spec.containers[0].ports[0].container_port, 22);
  }
}

TEST(MpiPluginTest, ExistingPortNotDuplicated) {
  api::Job job = MakeJob("mpi", {Task("master", 1), Task("worker", 1)});
  api::ContainerPort port;
  port.name = "ssh";
  port.container_port = 22;
  job.spec.tasks[1].template_.spec.containers[0].ports.push_back(port);
  auto p = Make("mpi");
  api::Pod w = PodFor(job, "worker", 0, *p);
  ASSERT_EQ(w.spec.containers[0].ports.size(), 1u);
  EXPECT_EQ(w.spec.containers[0].ports[0].name, "ssh");
}

TEST(TensorflowPluginTest, TfConfigExactJson) {
  api::Job job = MakeJob("tf", {Task("ps", 1), Task("worker", 2), Task("chief", 1)});
  auto p = Make("tensorflow");
  api::Pod w = PodFor(job, "worker", 1, *p);
  EXPECT_EQ(Env(w.spec.containers[0], "TF_CONFIG"),
            R"({"cluster":{"ps":["tf-ps-0.tf:2222"],"worker":["tf-worker-0.tf:2222","tf-worker-1.tf:2222"],)"
            R"("chief":["tf-chief-0.tf:2222"]},"task":{"type":"worker","index":1}})");
  api::Pod c = PodFor(job, "chief", 0, *p);
  EXPECT_NE(Env(c.spec.containers[0], "TF_CONFIG").find(R"("task":{"type":"chief","index":0})"), std::string::npos);
}

TEST(TensorflowPluginTest, CustomRoleNamesAndUnknownTask) {
  api::Job job = MakeJob("tf", {Task("trainer", 2), Task("other", 1)});
  auto p = Make("tensorflow", {"--worker=trainer", "--port=9000"});
  api::Pod o = PodFor(job, "other", 0, *p);
  EXPECT_EQ(Env(o.spec.containers[0], "TF_CONFIG"),
            R"({"cluster":{"worker":["tf-trainer-0.tf:9000","tf-trainer-1.tf:9000"]},"task":{"type":"other","index":0}})");
}

TEST(TensorflowPluginTest, SinglePodSkipped) {
  api::Job job = MakeJob("tf", {Task("worker", 1)});
  auto p = Make("tensorflow");
  EXPECT_EQ(Env(PodFor(job, "worker", 0, *p).spec.containers[0], "TF_CONFIG"), "<unset>");
}

TEST(HcclRankPluginTest, RankIndexAnnotation) {
  api::Job job = MakeJob("h", {Task("master", 2), Task("worker", 3)});
  auto p = Make("hcclrank");
  EXPECT_EQ(PodFor(job, "master", 1, *p).metadata.annotations.at("hccl/rankIndex"), "1");
  EXPECT_EQ(PodFor(job, "worker", 2, *p).metadata.annotations.at("hccl/rankIndex"), "4");
  api::EnvVar rank;
  rank.name = "RANK";
  rank.value = "9";
  job.spec.tasks[1].template_.spec.containers[0].env.push_back(rank);
  EXPECT_EQ(PodFor(job, "worker", 2, *p).metadata.annotations.at("hccl/rankIndex"), "9");
}


TEST(RayPluginTest, HeadAndWorkerCommandsAndService) {
  api::Job job = MakeJob("r", {Task("head", 1), Task("worker", 2)});
  job.spec.tasks[0].template_.spec.containers[0].name = "head";
  job.spec.tasks[1].template_.spec.containers[0].name = "worker";
  auto p = Make("ray", {"--port=7000"});
  api::Pod h = PodFor(job, "head", 0, *p);
  ASSERT_EQ(h.spec.containers[0].command.size(), 3u);
  EXPECT_EQ(h.spec.containers[0].command[2],
            "ray start --head --block --dashboard-host=0.0.0.0 --port=7000 --dashboard-port=8265 "
            "--ray-client-server-port=10001");
  ASSERT_EQ(h.spec.containers[0].ports.size(), 3u);
  EXPECT_EQ(h.spec.containers[0].ports[0].name, "gcs");
  EXPECT_EQ(h.spec.containers[0].ports[0].container_port, 7000);
  EXPECT_EQ(h.spec.containers[0].ports[2].name, "client-server");
  api::Pod w = PodFor(job, "worker", 1, *p);
  EXPECT_EQ(w.spec.containers[0].command.at(2), "ray start --block --address=r-head-0.r:7000");
  PluginObjects out;
  PluginContext ctx;
  ctx.job = &job;
  ASSERT_TRUE(p->Desired(ctx, &out).ok());
  const auto& svc = out.services.at("r-head-svc");
  EXPECT_EQ(svc.spec.selector.at("volcano.sh/task-spec"), "head");
  ASSERT_EQ(svc.spec.ports.size(), 3u);
  EXPECT_EQ(svc.spec.ports[1].name, "dashboard");
  EXPECT_EQ(svc.spec.ports[1].port, 8265);
  EXPECT_EQ(svc.spec.ports[1].target_port, api::json("dashboard"));
}

TEST(RayPluginTest, MissingHeadIsAnError) {
  api::Job job = MakeJob("r", {Task("worker", 1)});
  auto p = Make("ray");
  PluginObjects out;
  PluginContext ctx;
  ctx.job = &job;
  EXPECT_FALSE(p->Desired(ctx, &out).ok());
}

}  // namespace
}  // namespace tephra::reconcilers::job
