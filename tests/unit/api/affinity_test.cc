// Typed affinity / topology spread: field-preserving codecs over the shared selector model, and the
// validation of their selectors (paths name the offending field).
#include <gtest/gtest.h>

#include "test_util.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/validation.h"

namespace tephra::api {
namespace {

using testing::J;

const char* kSpec = R"({
  "containers": [{"name": "c", "image": "busybox"}],
  "affinity": {
    "nodeAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"], "x-req": 1}],
         "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}], "x-term": true}],
        "x-nodeselector": "kept"},
      "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["5"]}]},
         "x-pref": [1, 2]}],
      "x-nodeaffinity": {"deep": {"er": null}}},
    "podAffinity": {
      "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 50, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "cache"}},
                                            "topologyKey": "topology.kubernetes.io/zone",
                                            "namespaceSelector": {}, "matchLabelKeys": ["pod-template-hash"]}}]},
    "podAntiAffinity": {
      "requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["db"], "x-expr": "e"}],
                           "x-selector": 7},
         "namespaces": ["ns1", "ns2"], "topologyKey": "kubernetes.io/hostname", "x-podterm": "t"}],
      "x-anti": 1},
    "x-affinity": "a"},
  "topologySpreadConstraints": [
    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
     "labelSelector": {"matchLabels": {"app": "db"}}, "minDomains": 2, "nodeTaintsPolicy": "Honor",
     "x-tsc": {"k": "v"}}]
})";

TEST(Affinity, RoundTripKeepsUnknownFieldsAndUnknownOperators) {
  json in = J(kSpec);
  auto spec = FromJson<PodSpec>(in);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(ToJson(*spec), in);
}

TEST(Affinity, DecodesIntoTypedFields) {
  auto spec = FromJson<PodSpec>(J(kSpec));
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(spec->affinity.has_value());
  const Affinity& a = *spec->affinity;
  ASSERT_TRUE(a.node_affinity && a.node_affinity->required_during_scheduling_ignored_during_execution);
  const NodeSelectorTerm& term = a.node_affinity->required_during_scheduling_ignored_during_execution->node_selector_terms.at(0);
  EXPECT_EQ(term.match_expressions.at(0).op, core::SelectorOp::kIn);
  EXPECT_TRUE(term.Matches({{"zone", "b"}}, "n1"));
  EXPECT_FALSE(term.Matches({{"zone", "b"}}, "n9"));
  EXPECT_EQ(a.node_affinity->preferred_during_scheduling_ignored_during_execution.at(0).weight, 10);
  EXPECT_EQ(a.node_affinity->preferred_during_scheduling_ignored_during_execution.at(0).preference.match_expressions.at(0).op,
            core::SelectorOp::kGt);
  const PodAffinityTerm& pref = a.pod_affinity->preferred_during_scheduling_ignored_during_execution.at(0).pod_affinity_term;
  EXPECT_EQ(pref.topology_key, "topology.kubernetes.io/zone");
  ASSERT_TRUE(pref.namespace_selector.has_value()) << "{} is an empty selector, not an absent one";
  EXPECT_TRUE(pref.namespace_selector->Matches({{"any", "ns"}}));
  const PodAffinityTerm& anti = a.pod_anti_affinity->required_during_scheduling_ignored_during_execution.at(0);
  EXPECT_EQ(anti.namespaces, (std::vector<std::string>{"ns1", "ns2"}));
  ASSERT_TRUE(anti.label_selector.has_value());
  const auto& expr = anti.label_selector->match_expressions.at(0);
  EXPECT_EQ(expr.op, core::SelectorOp::kInvalid);
  EXPECT_EQ(expr.op_text, "Equals");
  EXPECT_FALSE(anti.label_selector->Matches({{"app", "db"}})) << "an unknown operator never matches";
  const TopologySpreadConstraint& tsc = spec->topology_spread_constraints.at(0);
  EXPECT_EQ(tsc.max_skew, 1);
  EXPECT_EQ(tsc.when_unsatisfiable, kDoNotSchedule);
  EXPECT_EQ(tsc.min_domains, 2);
  EXPECT_EQ(tsc.node_taints_policy, "Honor");
  EXPECT_FALSE(tsc.node_affinity_policy.has_value());
}

TEST(Affinity, NullSelectorStaysNullAndZeroValuesOfRequiredFieldsAreWritten) {
  json in = J(R"({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": ""}]}})");
  auto a = FromJson<Affinity>(in);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->pod_anti_affinity->required_during_scheduling_ignored_during_execution.at(0).label_selector.has_value());
  EXPECT_EQ(ToJson(*a), in) << "topologyKey has no omitempty in Go";
  TopologySpreadConstraint c;
  EXPECT_EQ(ToJson(c), J(R"({"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": ""})"));
}

TEST(Affinity, TypeErrorsNameThePath) {
  auto a = FromJson<Affinity>(J(R"({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "ten"}]}})"));
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
            std::string::npos)
      << a.status().message();
}

TEST(AffinityValidation, UnknownOperatorIsAnErrorAtItsPath) {
  auto spec = FromJson<PodSpec>(J(kSpec));
  ASSERT_TRUE(spec.ok());
  FieldErrors errs = ValidatePodSchedulingSelectors(*spec);
  ASSERT_EQ(errs.size(), 1u) << JoinFieldErrors(errs);
  EXPECT_EQ(errs[0].path,
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector."
            "matchExpressions[0].operator");
  EXPECT_EQ(errs[0].message,
            "Unsupported value: \"Equals\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"");
}

TEST(AffinityValidation, EverySelectorOfThePodSpecIsChecked) {
  PodSpec spec = FromJson<PodSpec>(J(R"({
    "containers": [{"name": "c"}],
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["x"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 1, "preference": {"matchExpressions": [{"key": "z", "operator": "in", "values": ["a"]}]}}]},
      "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "k",
          "namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["x"]}]}}}]}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
      "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Lt", "values": ["1"]}]}}]
  })")).value();
  FieldErrors errs = ValidatePodSchedulingSelectors(spec);
  std::vector<std::string> paths;
  for (const auto& e : errs) paths.push_back(e.path);
  EXPECT_EQ(paths, (std::vector<std::string>{
                       "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
                       "matchExpressions[0].values[0]",
                       "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference."
                       "matchExpressions[0].operator",
                       "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm."
                       "namespaceSelector.matchExpressions[0].values",
                       "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator"}))
      << JoinFieldErrors(errs);
}

}  // namespace
}  // namespace tephra::api
