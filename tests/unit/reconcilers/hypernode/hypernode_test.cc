// HyperNode discovery from node labels (docs/controllers.md, "HyperNode discovery"; Volcano's label source).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "hypernode/plan.h"
#include "hypernode/reconciler.h"
#include "tephra/api/validation.h"
#include "testing/fake_client.h"

namespace tephra::reconcilers::hypernode {
namespace {

using kube::testing::FakeClient;

constexpr const char* kGuideConfig = R"(
networkTopologyDiscovery:
  - source: ufm
    enabled: true
    interval: 10m
    config:
      endpoint: https://ufm-server:8080
  - source: roce
    enabled: false
  - source: label
    enabled: true
    config:
      networkTopologyTypes:
        topologyA3:
          - nodeLabel: "volcano.sh/hypercluster"
          - nodeLabel: "volcano.sh/hypernode"
          - nodeLabel: "kubernetes.io/hostname"
)";

api::Node MakeNode(const std::string& name, std::map<std::string, std::string> labels) {
  api::Node n;
  n.metadata.name = name;
  n.metadata.labels = std::move(labels);
  n.metadata.labels["kubernetes.io/hostname"] = name;
  return n;
}

// Volcano's guide: node0..7; s0..s3 (volcano.sh/hypernode) two nodes each; s4 = {s0,s1}, s5 = {s2,s3}.
std::vector<api::Node> GuideNodes() {
  std::vector<api::Node> out;
  for (int i = 0; i < 8; ++i)
    out.push_back(MakeNode("node" + std::to_string(i), {{"volcano.sh/hypernode", "s" + std::to_string(i / 2)},
                                                         {"volcano.sh/hypercluster", i < 4 ? "s4" : "s5"}}));
  return out;
}

DiscoveryConfig Config(const std::string& yaml) {
  auto c = ParseConfigText(yaml);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : DiscoveryConfig{};
}

std::vector<std::string> Members(const api::HyperNode& h) {
  std::vector<std::string> out;
  for (const auto& m : h.spec.members) out.push_back(m.type + ":" + m.selector.exact_match->name);
  return out;
}

const api::HyperNode* Find(const std::vector<api::HyperNode>& v, const std::string& name) {
  for (const auto& h : v)
    if (h.metadata.name == name) return &h;
  return nullptr;
}

std::string A3(int tier, const std::string& label, const std::string& value) {
  return HyperNodeName("topologyA3", tier, label, value);
}

// The server's copies: what a pass that created `hs` leaves behind (resourceVersion set).
std::vector<api::HyperNode> Stored(std::vector<api::HyperNode> hs) {
  for (auto& h : hs) h.metadata.resource_version = "7";
  return hs;
}

// ------------------------------------------------------------------------------------------------ config

TEST(HyperNodeConfig, Sha256MatchesTheStandardVectors) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(HyperNodeConfig, GuideConfigParsesAndUfmIsAWarningNotAnError) {
  DiscoveryConfig c = Config(kGuideConfig);
  EXPECT_TRUE(c.label_enabled);
  EXPECT_EQ(c.interval, std::chrono::hours(1)) << "Volcano's default interval";
  ASSERT_EQ(c.types.size(), 1u);
  EXPECT_FALSE(c.types[0].profile);
  ASSERT_EQ(c.types[0].levels.size(), 2u) << "the hostname leaf is dropped";
  EXPECT_EQ(c.types[0].levels[0].node_label, "volcano.sh/hypercluster");
  EXPECT_EQ(c.types[0].levels[1].tier_name, "volcano.sh/hypernode") << "legacy tierName is the label key";
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("\"ufm\" is enabled but not implemented"), std::string::npos) << c.warnings[0];
}

TEST(HyperNodeConfig, NoConfigOrDisabledLabelSourceMeansNoDiscovery) {
  EXPECT_FALSE(Config("").label_enabled);
  EXPECT_FALSE(Config("networkTopologyDiscovery: []").label_enabled);
  EXPECT_FALSE(Config("networkTopologyDiscovery:\n- source: label\n  enabled: false\n").label_enabled);
  DiscoveryConfig c = Config("networkTopologyDiscovery:\n- source: label\n  enabled: true\n  interval: 90s\n");
  EXPECT_TRUE(c.label_enabled);
  EXPECT_EQ(c.interval, std::chrono::seconds(90));
}

TEST(HyperNodeConfig, ProfileFormParsesSelectorAndTierNames) {
  DiscoveryConfig c = Config(R"(
networkTopologyDiscovery:
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      topologyShallow:
        nodeSelector:
          matchLabels:
            volcano.sh/network-topology-profile: shallow
        levels:
        - nodeLabel: volcano.sh/shallow-cluster
          tierName: volcano.sh/hypercluster
        - nodeLabel: volcano.sh/shallow-hypernode
          tierName: volcano.sh/hypernode
        - nodeLabel: kubernetes.io/hostname
)");
  ASSERT_EQ(c.types.size(), 1u);
  EXPECT_TRUE(c.types[0].profile);
  ASSERT_TRUE(c.types[0].node_selector);
  ASSERT_EQ(c.types[0].levels.size(), 2u);
  EXPECT_EQ(c.types[0].levels[1].node_label, "volcano.sh/shallow-hypernode");
  EXPECT_EQ(c.types[0].levels[1].tier_name, "volcano.sh/hypernode");
}

TEST(HyperNodeConfig, InvalidConfigsAreRefusedWithTheField) {
  auto bad = [](const std::string& types) {
    return ParseConfigText("networkTopologyDiscovery:\n- source: label\n  enabled: true\n  config:\n"
                           "    networkTopologyTypes:\n" + types);
  };
  struct Case {
    std::string types, want;
  };
  for (const Case& c : std::vector<Case>{
           {"      t: {levels: [{nodeLabel: a, tierName: x}, {nodeLabel: b}]}\n", "last level must be kubernetes.io/hostname"},
           {"      t: {levels: [{nodeLabel: a}, {nodeLabel: kubernetes.io/hostname, tierName: h}]}\n", "leaf has no tier"},
           {"      t: {levels: [{nodeLabel: kubernetes.io/hostname}]}\n", "at least one topology level"},
           {"      t: {levels: [{nodeLabel: a, tierName: x}, {nodeLabel: b, tierName: x}, {nodeLabel: kubernetes.io/hostname}]}\n",
            "tierName x is given twice"},
           {"      t: {selector: {}, levels: []}\n", "unknown field selector"},
           {"      t: [{nodeLabel: a}, {nodeLabel: a}]\n", "nodeLabel a is given twice"},
           {"      abcdefghijklmnopqrstu: [{nodeLabel: a}, {nodeLabel: kubernetes.io/hostname}]\n", "1 to 20 characters"},
           {"      A_b: [{nodeLabel: a}]\n      a-b: [{nodeLabel: a}]\n", "both normalize to a-b"},
           {"      t: 5\n", "must be a list"},
       }) {
    auto r = bad(c.types);
    ASSERT_FALSE(r.ok()) << c.types;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status() << " for " << c.types;
  }
  auto r = ParseConfigText("networkTopologyDiscovery:\n- source: label\n  enabled: true\n  interval: soon\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("interval"), std::string::npos) << r.status();
}

// ------------------------------------------------------------------------------------------------ discovery

TEST(HyperNodeDiscover, VolcanosGuideTreeEightNodesTwoTiers) {
  auto got = Discover(Config(kGuideConfig), GuideNodes());
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 6u);
  for (int s = 0; s < 4; ++s) {
    const api::HyperNode* h = Find(*got, A3(1, "volcano.sh/hypernode", "s" + std::to_string(s)));
    ASSERT_NE(h, nullptr) << s;
    EXPECT_EQ(h->spec.tier, 1);
    EXPECT_EQ(h->spec.tier_name, "volcano.sh/hypernode");
    EXPECT_EQ(Members(*h), (std::vector<std::string>{"Node:node" + std::to_string(2 * s),
                                                     "Node:node" + std::to_string(2 * s + 1)}));
    EXPECT_EQ(h->metadata.labels.at("volcano.sh/network-topology-source"), "label");
    EXPECT_EQ(h->metadata.labels.at("volcano.sh/hypernode"), "s" + std::to_string(s));
    EXPECT_EQ(h->metadata.labels.count(std::string(kProfileLabel)), 0u) << "legacy types carry no profile label";
  }
  const api::HyperNode* s4 = Find(*got, A3(2, "volcano.sh/hypercluster", "s4"));
  ASSERT_NE(s4, nullptr);
  EXPECT_EQ(s4->spec.tier, 2);
  EXPECT_EQ(s4->spec.tier_name, "volcano.sh/hypercluster");
  std::vector<std::string> want = {"HyperNode:" + A3(1, "volcano.sh/hypernode", "s0"),
                                   "HyperNode:" + A3(1, "volcano.sh/hypernode", "s1")};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(Members(*s4), want);
  // Children first: every tier-1 object precedes the tier-2 ones.
  EXPECT_EQ((*got)[3].spec.tier, 1);
  EXPECT_EQ((*got)[4].spec.tier, 2);
  for (const auto& h : *got) {
    EXPECT_TRUE(api::IsDns1123Subdomain(h.metadata.name)) << h.metadata.name;
    EXPECT_EQ(api::ValidateHyperNode(h).size(), 0u) << h.metadata.name;
  }
}

TEST(HyperNodeDiscover, NamesAreDeterministicDnsValidAndScopedByType) {
  std::string n = HyperNodeName("topologyA3", 1, "volcano.sh/hypernode", "s0");
  EXPECT_EQ(n, "hypernode-topologya3-tier1-" + Sha256Hex(std::string("topologyA3\0volcano.sh/hypernode\0s0", 34)).substr(0, 12));
  EXPECT_EQ(n, HyperNodeName("topologyA3", 1, "volcano.sh/hypernode", "s0"));
  EXPECT_NE(n, HyperNodeName("topologyA2", 1, "volcano.sh/hypernode", "s0")) << "one physical domain per type";
  EXPECT_EQ(HyperNodeName("My_Type", 2, "k", "v").rfind("hypernode-my-type-tier2-", 0), 0u);
  // Whatever order the cache lists Nodes in, the same objects come out.
  auto nodes = GuideNodes();
  auto first = Discover(Config(kGuideConfig), nodes);
  std::mt19937 rng(42);
  for (int i = 0; i < 5; ++i) {
    std::shuffle(nodes.begin(), nodes.end(), rng);
    auto again = Discover(Config(kGuideConfig), nodes);
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->size(), first->size());
    for (size_t j = 0; j < first->size(); ++j) EXPECT_EQ(api::ToJson((*again)[j]), api::ToJson((*first)[j]));
  }
}

TEST(HyperNodeDiscover, LegacyNodeMissingALevelJoinsOnlyTheTiersBelow) {
  auto nodes = GuideNodes();
  nodes[7].metadata.labels.erase("volcano.sh/hypercluster");  // s3 stays tier 1 through node6, node7 too
  nodes.push_back(MakeNode("node8", {{"volcano.sh/hypercluster", "s5"}}));  // no tier-1 label: nowhere
  auto got = Discover(Config(kGuideConfig), nodes);
  ASSERT_TRUE(got.ok()) << got.status();
  const api::HyperNode* s3 = Find(*got, A3(1, "volcano.sh/hypernode", "s3"));
  ASSERT_NE(s3, nullptr);
  EXPECT_EQ(Members(*s3), (std::vector<std::string>{"Node:node6", "Node:node7"}));
  for (const auto& h : *got)
    for (const auto& m : Members(h)) EXPECT_EQ(m.find("node8"), std::string::npos) << h.metadata.name;
}

TEST(HyperNodeDiscover, ChildUnderTwoParentsFailsAndPublishesNothing) {
  auto nodes = GuideNodes();
  nodes[1].metadata.labels["volcano.sh/hypercluster"] = "s5";  // s0 is under s4 (node0) and s5 (node1)
  auto got = Discover(Config(kGuideConfig), nodes);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("domain volcano.sh/hypernode=s0 is under two parents"), std::string::npos)
      << got.status();
  EXPECT_NE(got.status().message().find("node1"), std::string::npos) << got.status();
  Observed obs;
  obs.config = Config(kGuideConfig);
  obs.nodes = nodes;
  obs.hypernodes = Stored(*Discover(Config(kGuideConfig), GuideNodes()));
  Actions a = Plan(obs);
  EXPECT_FALSE(a.error.ok());
  EXPECT_TRUE(a.create.empty() && a.update.empty() && a.remove.empty()) << "the last topology stays as it was";
}

constexpr const char* kProfiles = R"(
networkTopologyDiscovery:
- source: label
  enabled: true
  config:
    networkTopologyTypes:
      shallow:
        nodeSelector:
          matchLabels: {volcano.sh/network-topology-profile: shallow}
        levels:
        - {nodeLabel: example.com/rack, tierName: rack}
        - {nodeLabel: kubernetes.io/hostname}
      deep:
        nodeSelector:
          matchExpressions: [{key: volcano.sh/network-topology-profile, operator: In, values: [deep]}]
        levels:
        - {nodeLabel: example.com/spine, tierName: spine}
        - {nodeLabel: example.com/rack, tierName: rack}
        - {nodeLabel: kubernetes.io/hostname}
)";

TEST(HyperNodeDiscover, ProfilesSelectNodesAndScopeDomains) {
  std::vector<api::Node> nodes = {
      MakeNode("a", {{"volcano.sh/network-topology-profile", "shallow"}, {"example.com/rack", "r1"}}),
      MakeNode("b", {{"volcano.sh/network-topology-profile", "deep"}, {"example.com/rack", "r1"}, {"example.com/spine", "sp"}}),
      MakeNode("c", {{"example.com/rack", "r1"}}),  // selected by no profile: outside discovery
  };
  auto got = Discover(Config(kProfiles), nodes);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  const api::HyperNode* shallow = Find(*got, HyperNodeName("shallow", 1, "example.com/rack", "r1"));
  const api::HyperNode* deep = Find(*got, HyperNodeName("deep", 1, "example.com/rack", "r1"));
  const api::HyperNode* spine = Find(*got, HyperNodeName("deep", 2, "example.com/spine", "sp"));
  ASSERT_TRUE(shallow && deep && spine);
  EXPECT_EQ(Members(*shallow), std::vector<std::string>{"Node:a"}) << "rack r1 of another profile is another domain";
  EXPECT_EQ(Members(*deep), std::vector<std::string>{"Node:b"});
  EXPECT_EQ(spine->spec.tier_name, "spine");
  EXPECT_EQ(deep->spec.tier_name, "rack");
  EXPECT_EQ(shallow->metadata.labels.at(std::string(kProfileLabel)), "shallow");
  EXPECT_EQ(spine->metadata.labels.at(std::string(kProfileLabel)), "deep");
}

TEST(HyperNodeDiscover, ProfileNodeMissingALevelOrInTwoProfilesIsAnError) {
  auto got = Discover(Config(kProfiles), {MakeNode("b", {{"volcano.sh/network-topology-profile", "deep"},
                                                          {"example.com/rack", "r1"}})});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("node b is selected by profile deep but has no label example.com/spine"),
            std::string::npos)
      << got.status();
  DiscoveryConfig c = Config(kProfiles);
  c.types[0].node_selector = api::LabelSelector{};  // deep now selects every Node, shallow's too
  got = Discover(c, {MakeNode("a", {{"volcano.sh/network-topology-profile", "shallow"}, {"example.com/rack", "r1"}})});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("node a is selected by the profiles"), std::string::npos) << got.status();
}

// ------------------------------------------------------------------------------------------------ plan

TEST(HyperNodePlan, FirstPassCreatesAndAPassOnItsOwnOutputWritesNothing) {
  Observed obs;
  obs.config = Config(kGuideConfig);
  obs.nodes = GuideNodes();
  Actions a = Plan(obs);
  ASSERT_TRUE(a.error.ok()) << a.error;
  EXPECT_EQ(a.create.size(), 6u);
  EXPECT_TRUE(a.update.empty() && a.remove.empty());
  // The server returns what it stored, maybe with fields of its own (status, managedFields): still no write.
  obs.hypernodes = Stored(a.create);
  for (auto& h : obs.hypernodes) h.status.node_count = 2;
  a = Plan(obs);
  ASSERT_TRUE(a.error.ok());
  EXPECT_TRUE(a.create.empty() && a.update.empty() && a.remove.empty());
}

TEST(HyperNodePlan, RelabelUpdatesMembersAndRemovedDomainsDeleteOnlyGeneratedObjects) {
  Observed obs;
  obs.config = Config(kGuideConfig);
  obs.nodes = GuideNodes();
  obs.hypernodes = Stored(*Discover(obs.config, obs.nodes));
  api::HyperNode user;  // a hand-made HyperNode: never listed in any write
  user.metadata.name = "my-rack";
  user.spec.tier = 1;
  api::MemberSpec m;
  m.type = "Node";
  m.selector.exact_match = api::ExactMatch{"node0", {}};
  user.spec.members.push_back(m);
  obs.hypernodes.push_back(user);
  api::HyperNode other = user;  // another source's object (ufm) is not ours either
  other.metadata.name = "ufm-leaf";
  other.metadata.labels["volcano.sh/network-topology-source"] = "ufm";
  obs.hypernodes.push_back(other);

  // node6 and node7 move from s3 to s2: s3 disappears, s2 gains them, s5 loses s3.
  obs.nodes[6].metadata.labels["volcano.sh/hypernode"] = "s2";
  obs.nodes[7].metadata.labels["volcano.sh/hypernode"] = "s2";
  Actions a = Plan(obs);
  ASSERT_TRUE(a.error.ok()) << a.error;
  EXPECT_TRUE(a.create.empty());
  ASSERT_EQ(a.update.size(), 2u);
  EXPECT_EQ(a.update[0].metadata.name, A3(1, "volcano.sh/hypernode", "s2"));
  EXPECT_EQ(a.update[0].metadata.resource_version, "7") << "updates carry the read resourceVersion";
  EXPECT_EQ(Members(a.update[0]).size(), 4u);
  EXPECT_EQ(a.update[1].metadata.name, A3(2, "volcano.sh/hypercluster", "s5"));
  EXPECT_EQ(a.remove, std::vector<std::string>{A3(1, "volcano.sh/hypernode", "s3")});

  // Discovery switched off: every generated object goes, parents first; the others stay.
  obs.config = Config("networkTopologyDiscovery: []");
  a = Plan(obs);
  ASSERT_TRUE(a.error.ok());
  ASSERT_EQ(a.remove.size(), 6u);
  EXPECT_EQ(a.remove[0].find("-tier2-") != std::string::npos && a.remove[1].find("-tier2-") != std::string::npos, true);
  for (const auto& n : a.remove) EXPECT_TRUE(n != "my-rack" && n != "ufm-leaf") << n;
}

TEST(HyperNodePlan, AUserHyperNodeHoldingAGeneratedNameStopsPublication) {
  Observed obs;
  obs.config = Config(kGuideConfig);
  obs.nodes = GuideNodes();
  api::HyperNode user;
  user.metadata.name = A3(2, "volcano.sh/hypercluster", "s4");
  user.spec.tier = 5;
  obs.hypernodes.push_back(user);
  Actions a = Plan(obs);
  ASSERT_FALSE(a.error.ok());
  EXPECT_NE(a.error.message().find("discovery does not touch it"), std::string::npos) << a.error;
  EXPECT_TRUE(a.create.empty() && a.update.empty() && a.remove.empty());
}

// ------------------------------------------------------------------------------------------------ executor

class HyperNodeReconcilerTest : public ::testing::Test {
 protected:
  HyperNodeReconcilerTest()
      : client_(std::make_shared<FakeClient>()), nodes_(client_), hns_(client_), cms_(client_) {
    HyperNodeReconcilerOptions o;
    o.client = client_;
    o.nodes = &nodes_;
    o.hypernodes = &hns_;
    o.configmaps = &cms_;
    rec_ = std::make_unique<HyperNodeReconciler>(o);
  }
  void SetConfig(const std::string& text) {
    api::ConfigMap cm;
    cm.metadata.namespace_ = "volcano-system";
    cm.metadata.name = "volcano-controller-configmap";
    cm.data[std::string(kConfigKey)] = text;
    auto cur = client_->Get(api::ConfigMap::Resource(), "volcano-system", "volcano-controller-configmap");
    if (cur.ok()) {
      cm.metadata.resource_version = (*cur)["metadata"]["resourceVersion"].get<std::string>();
      ASSERT_TRUE(client_->Update(api::ConfigMap::Resource(), "volcano-system", api::ToJson(cm)).ok());
    } else {
      client_->Seed(api::ConfigMap::Resource(), api::ToJson(cm));
    }
  }
  void Relabel(const std::string& node, const std::string& key, const std::string& value) {
    auto n = kube::GetAs<api::Node>(*client_, "", node).value();
    n.metadata.labels[key] = value;
    ASSERT_TRUE(client_->Update(api::Node::Resource(), "", api::ToJson(n)).ok());
  }
  void Refresh() {
    nodes_.Replace(std::move(client_->List(api::Node::Resource(), "", {}).value().items));
    hns_.Replace(std::move(client_->List(api::HyperNode::Resource(), "", {}).value().items));
    cms_.Replace(std::move(client_->List(api::ConfigMap::Resource(), "", {}).value().items));
  }
  kube::ReconcileResult Run() {
    Refresh();
    return rec_->Reconcile(kKey);
  }
  std::map<std::string, api::HyperNode> Stored() {
    std::map<std::string, api::HyperNode> out;
    auto list = client_->List(api::HyperNode::Resource(), "", {});
    for (const auto& j : list.value().items) {
      api::HyperNode h;
      EXPECT_TRUE(api::Decode(j, &h).ok());
      out[h.metadata.name] = h;
    }
    return out;
  }
  int Writes() {
    int n = 0;
    for (const auto& a : client_->Actions())
      if (a.resource.find("hypernodes") == 0 && (a.verb == "create" || a.verb == "update" || a.verb == "delete")) ++n;
    return n;
  }

  std::shared_ptr<FakeClient> client_;
  kube::Informer<api::Node> nodes_;
  kube::Informer<api::HyperNode> hns_;
  kube::Informer<api::ConfigMap> cms_;
  std::unique_ptr<HyperNodeReconciler> rec_;
};

TEST_F(HyperNodeReconcilerTest, CreatesUpdatesOnRelabelAndDeletesWhenConfigGoes) {
  for (const auto& n : GuideNodes()) client_->Seed(api::Node::Resource(), api::ToJson(n));
  api::HyperNode user;
  user.metadata.name = "my-rack";
  user.spec.tier = 1;
  api::MemberSpec m;
  m.type = "Node";
  m.selector.exact_match = api::ExactMatch{"node0", {}};
  user.spec.members.push_back(m);
  client_->Seed(api::HyperNode::Resource(), api::ToJson(user));
  SetConfig(kGuideConfig);
  auto r = Run();
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_TRUE(r.requeue_after) << "the label source resyncs at its interval";
  EXPECT_EQ(Stored().size(), 7u);
  // Same world: nothing written.
  client_->ClearActions();
  ASSERT_TRUE(Run().status.ok());
  EXPECT_EQ(Writes(), 0);

  Relabel("node7", "volcano.sh/hypernode", "s2");
  ASSERT_TRUE(Run().status.ok());
  auto s = Stored();
  EXPECT_EQ(Members(s.at(A3(1, "volcano.sh/hypernode", "s2"))).size(), 3u);
  EXPECT_EQ(Members(s.at(A3(1, "volcano.sh/hypernode", "s3"))), std::vector<std::string>{"Node:node6"});

  // The ConfigMap deleted (by mistake, or by an upgrade that recreates it): nothing is written.
  ASSERT_TRUE(client_->Delete(api::ConfigMap::Resource(), "volcano-system", "volcano-controller-configmap").ok());
  cms_.Replace(std::move(client_->List(api::ConfigMap::Resource(), "", {}).value().items));
  client_->ClearActions();
  ASSERT_TRUE(Run().status.ok());
  EXPECT_EQ(Writes(), 0) << "a missing ConfigMap keeps the generated topology";
  EXPECT_EQ(Stored().size(), 7u);

  SetConfig("networkTopologyDiscovery:\n- source: label\n  enabled: false\n");
  ASSERT_TRUE(Run().status.ok());
  s = Stored();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s.begin()->first, "my-rack") << "a user's HyperNode is never deleted";
}

TEST_F(HyperNodeReconcilerTest, StaleCacheMeetsAlreadyExistsAndConflictAndConverges) {
  for (const auto& n : GuideNodes()) client_->Seed(api::Node::Resource(), api::ToJson(n));
  SetConfig(kGuideConfig);
  ASSERT_TRUE(Run().status.ok());
  // A pass on the caches of before the creates: every create meets AlreadyExists, re-reads, finds its own object
  // and writes nothing more.
  cms_.Replace(std::move(client_->List(api::ConfigMap::Resource(), "", {}).value().items));
  hns_.Replace({});
  client_->ClearActions();
  auto r = rec_->Reconcile(kKey);
  ASSERT_TRUE(r.status.ok()) << r.status;
  for (const auto& a : client_->Actions()) EXPECT_NE(a.verb, "update") << a.name;

  // 409: the cache holds an old resourceVersion of s3 when node7 is relabelled; the update re-reads and lands.
  Refresh();
  std::string s3 = A3(1, "volcano.sh/hypernode", "s3");
  auto cur = kube::GetAs<api::HyperNode>(*client_, "", s3).value();
  cur.metadata.annotations["someone"] = "else";
  ASSERT_TRUE(client_->Update(api::HyperNode::Resource(), "", api::ToJson(cur)).ok());
  Relabel("node7", "volcano.sh/hypernode", "s2");
  nodes_.Replace(std::move(client_->List(api::Node::Resource(), "", {}).value().items));
  client_->ClearActions();
  r = rec_->Reconcile(kKey);
  ASSERT_TRUE(r.status.ok()) << r.status;
  auto got = Stored().at(s3);
  EXPECT_EQ(Members(got), std::vector<std::string>{"Node:node6"});
  EXPECT_EQ(got.metadata.annotations.at("someone"), "else") << "the re-read object is merged, not replaced";

  // AlreadyExists on a user's object (created after the cache was filled): not touched, the pass fails.
  Relabel("node0", "volcano.sh/hypernode", "s9");
  Refresh();
  api::HyperNode user;
  user.metadata.name = A3(1, "volcano.sh/hypernode", "s9");
  user.spec.tier = 1;
  api::MemberSpec m;
  m.type = "Node";
  m.selector.exact_match = api::ExactMatch{"elsewhere", {}};
  user.spec.members.push_back(m);
  client_->Seed(api::HyperNode::Resource(), api::ToJson(user));
  r = rec_->Reconcile(kKey);
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(Members(Stored().at(user.metadata.name)), std::vector<std::string>{"Node:elsewhere"});
}

TEST_F(HyperNodeReconcilerTest, InvalidConfigOrNonTreeKeepsThePreviousTopology) {
  for (const auto& n : GuideNodes()) client_->Seed(api::Node::Resource(), api::ToJson(n));
  SetConfig(kGuideConfig);
  ASSERT_TRUE(Run().status.ok());
  auto before = Stored();
  SetConfig("networkTopologyDiscovery:\n- source: label\n  enabled: true\n  config: {networkTopologyTypes: {t: 3}}\n");
  client_->ClearActions();
  auto r = Run();
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(r.terminal) << "only a config change can fix it";
  EXPECT_EQ(Writes(), 0);
  SetConfig(kGuideConfig);
  Relabel("node1", "volcano.sh/hypercluster", "s5");
  r = Run();
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(Writes(), 0);
  EXPECT_EQ(Stored().size(), before.size());
}

}  // namespace
}  // namespace tephra::reconcilers::hypernode
