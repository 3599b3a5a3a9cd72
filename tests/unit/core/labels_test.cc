// The one selector model (tephra/core/labels.h): every operator, Gt/Lt integer parsing, null vs empty
// selectors, node selector terms, and validation with field paths.
#include "tephra/core/labels.h"

#include <gtest/gtest.h>

#include <limits>

namespace tephra::core {
namespace {

SelectorRequirement Req(std::string key, SelectorOp op, std::vector<std::string> values = {}) {
  SelectorRequirement r;
  r.key = std::move(key);
  r.op = op;
  r.values = std::move(values);
  return r;
}

TEST(SelectorOp, ParsesKubernetesNamesCaseSensitively) {
  for (auto [text, op] : std::vector<std::pair<std::string, SelectorOp>>{
           {"In", SelectorOp::kIn}, {"NotIn", SelectorOp::kNotIn}, {"Exists", SelectorOp::kExists},
           {"DoesNotExist", SelectorOp::kDoesNotExist}, {"Gt", SelectorOp::kGt}, {"Lt", SelectorOp::kLt}}) {
    EXPECT_EQ(ParseSelectorOp(text), op) << text;
    EXPECT_EQ(SelectorOpName(op), text);
  }
  EXPECT_EQ(ParseSelectorOp("in"), SelectorOp::kInvalid);
  EXPECT_EQ(ParseSelectorOp("Equals"), SelectorOp::kInvalid);
  EXPECT_EQ(ParseSelectorOp(""), SelectorOp::kInvalid);
  EXPECT_EQ(SelectorOpName(SelectorOp::kInvalid), "");
}

TEST(SelectorRequirement, EveryOperator) {
  const Labels l{{"zone", "a"}, {"gen", "7"}};
  EXPECT_TRUE(Req("zone", SelectorOp::kIn, {"a", "b"}).Matches(l));
  EXPECT_FALSE(Req("zone", SelectorOp::kIn, {"b"}).Matches(l));
  EXPECT_FALSE(Req("rack", SelectorOp::kIn, {"a"}).Matches(l)) << "In needs the key";
  EXPECT_FALSE(Req("zone", SelectorOp::kNotIn, {"a"}).Matches(l));
  EXPECT_TRUE(Req("zone", SelectorOp::kNotIn, {"b"}).Matches(l));
  EXPECT_TRUE(Req("rack", SelectorOp::kNotIn, {"a"}).Matches(l)) << "NotIn matches an absent key";
  EXPECT_TRUE(Req("zone", SelectorOp::kExists).Matches(l));
  EXPECT_FALSE(Req("rack", SelectorOp::kExists).Matches(l));
  EXPECT_TRUE(Req("rack", SelectorOp::kDoesNotExist).Matches(l));
  EXPECT_FALSE(Req("zone", SelectorOp::kDoesNotExist).Matches(l));
  EXPECT_TRUE(Req("gen", SelectorOp::kGt, {"5"}).Matches(l));
  EXPECT_FALSE(Req("gen", SelectorOp::kGt, {"7"}).Matches(l));
  EXPECT_TRUE(Req("gen", SelectorOp::kLt, {"8"}).Matches(l));
  EXPECT_FALSE(Req("gen", SelectorOp::kLt, {"7"}).Matches(l));
  EXPECT_FALSE(Req("rack", SelectorOp::kGt, {"1"}).Matches(l)) << "Gt needs the key";
  // An operator Kubernetes does not define never matches, whatever it would mean if read as another.
  SelectorRequirement bad = Req("zone", SelectorOp::kInvalid, {"a"});
  bad.op_text = "in";
  EXPECT_FALSE(bad.Matches(l));
  EXPECT_FALSE(Req("rack", SelectorOp::kInvalid, {"a"}).Matches(l));
}

TEST(SelectorRequirement, GtLtParseBase10Int64Strictly) {
  auto gt = [](const std::string& have, const std::string& bound) {
    return Req("k", SelectorOp::kGt, {bound}).Matches({{"k", have}});
  };
  EXPECT_TRUE(gt("-3", "-4"));
  EXPECT_TRUE(gt("+5", "4"));
  EXPECT_TRUE(gt("9223372036854775807", "9223372036854775806"));
  EXPECT_TRUE(gt("-9223372036854775807", "-9223372036854775808"));
  EXPECT_FALSE(gt("9223372036854775808", "0")) << "overflow is not a number";
  EXPECT_FALSE(gt(" 5", "4")) << "no spaces";
  EXPECT_FALSE(gt("5 ", "4"));
  EXPECT_FALSE(gt("5.0", "4")) << "integers only";
  EXPECT_FALSE(gt("0x10", "4"));
  EXPECT_FALSE(gt("", "4"));
  EXPECT_FALSE(gt("-", "-4"));
  EXPECT_FALSE(gt("5", "four"));
  EXPECT_FALSE(Req("k", SelectorOp::kGt, {"1", "2"}).Matches({{"k", "5"}})) << "exactly one value";
  EXPECT_FALSE(Req("k", SelectorOp::kLt, {}).Matches({{"k", "5"}}));
  int64_t v = 0;
  ASSERT_TRUE(ParseSelectorInt("-9223372036854775808", &v));
  EXPECT_EQ(v, std::numeric_limits<int64_t>::min());
  EXPECT_FALSE(ParseSelectorInt("-9223372036854775809", &v));
  EXPECT_FALSE(ParseSelectorInt("+", &v));
}

TEST(LabelSelector, EmptyMatchesEverythingNullMatchesNothing) {
  const Labels l{{"app", "db"}};
  LabelSelector empty;
  EXPECT_TRUE(empty.Matches(l));
  EXPECT_TRUE(empty.Matches({}));
  EXPECT_TRUE(Matches(std::optional<LabelSelector>(empty), l));
  EXPECT_FALSE(Matches(std::optional<LabelSelector>(), l));
  EXPECT_FALSE(Matches(std::optional<LabelSelector>(), {}));
}

TEST(LabelSelector, MatchLabelsAndExpressionsAreAnded) {
  LabelSelector s;
  s.match_labels = {{"app", "db"}};
  s.match_expressions = {Req("tier", SelectorOp::kIn, {"gold", "silver"})};
  EXPECT_TRUE(s.Matches({{"app", "db"}, {"tier", "gold"}}));
  EXPECT_FALSE(s.Matches({{"app", "db"}, {"tier", "bronze"}}));
  EXPECT_FALSE(s.Matches({{"app", "web"}, {"tier", "gold"}}));
  EXPECT_FALSE(s.Matches({{"tier", "gold"}}));
  EXPECT_TRUE(s.Valid());
  s.match_expressions.push_back(Req("gen", SelectorOp::kGt, {"1"}));
  EXPECT_FALSE(s.Valid()) << "Gt is not a label selector operator";
  s.match_expressions.back().op = SelectorOp::kInvalid;
  EXPECT_FALSE(s.Valid());
  EXPECT_FALSE(s.Matches({{"app", "db"}, {"tier", "gold"}, {"gen", "2"}}));
}

TEST(NodeSelectorTerm, ExpressionsFieldsAndEmptyTerm) {
  const Labels l{{"zone", "a"}};
  NodeSelectorTerm empty;
  EXPECT_FALSE(empty.Matches(l, "n1")) << "a term without requirements matches nothing";
  NodeSelectorTerm t;
  t.match_expressions = {Req("zone", SelectorOp::kIn, {"a"})};
  t.match_fields = {Req("metadata.name", SelectorOp::kIn, {"n1"})};
  EXPECT_TRUE(t.Matches(l, "n1"));
  EXPECT_FALSE(t.Matches(l, "n2"));
  t.match_fields = {Req("metadata.name", SelectorOp::kNotIn, {"n1"})};
  EXPECT_FALSE(t.Matches(l, "n1"));
  EXPECT_TRUE(t.Matches(l, "n2"));
  t.match_fields = {Req("metadata.uid", SelectorOp::kIn, {"n1"})};
  EXPECT_FALSE(t.Matches(l, "n1")) << "only metadata.name is a node field";
  t.match_fields = {Req("metadata.name", SelectorOp::kExists)};
  EXPECT_FALSE(t.Matches(l, "n1")) << "fields take In/NotIn only";
  EXPECT_TRUE(t.Valid());
  t.match_fields.clear();
  t.match_expressions.push_back(Req("gen", SelectorOp::kInvalid, {"1"}));
  EXPECT_FALSE(t.Valid());
  EXPECT_FALSE(t.Matches({{"zone", "a"}, {"gen", "1"}}, "n1"));
}

TEST(SelectorValidation, OperatorsValuesAndPaths) {
  std::vector<SelectorError> errs;
  LabelSelector s;
  SelectorRequirement bad = Req("app", SelectorOp::kInvalid, {"x"});
  bad.op_text = "Equals";
  s.match_expressions = {Req("a", SelectorOp::kIn, {"x"}), bad, Req("c", SelectorOp::kIn), Req("d", SelectorOp::kExists, {"x"}),
                         Req("e", SelectorOp::kGt, {"1"}), Req("", SelectorOp::kExists)};
  ValidateLabelSelector(s, "spec.selector", &errs);
  ASSERT_EQ(errs.size(), 5u);
  EXPECT_EQ(errs[0], (SelectorError{"spec.selector.matchExpressions[1].operator",
                                    "Unsupported value: \"Equals\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\""}));
  EXPECT_EQ(errs[1].path, "spec.selector.matchExpressions[2].values");
  EXPECT_EQ(errs[2].path, "spec.selector.matchExpressions[3].values");
  EXPECT_EQ(errs[3].path, "spec.selector.matchExpressions[4].operator") << "Gt is for node selectors";
  EXPECT_EQ(errs[4].path, "spec.selector.matchExpressions[5].key");

  errs.clear();
  NodeSelectorTerm t;
  t.match_expressions = {Req("gen", SelectorOp::kGt, {"5"}), Req("gen", SelectorOp::kLt, {"x"}),
                         Req("gen", SelectorOp::kGt, {"1", "2"})};
  t.match_fields = {Req("metadata.name", SelectorOp::kIn, {"n1"}), Req("metadata.name", SelectorOp::kIn, {"a", "b"}),
                    Req("spec.x", SelectorOp::kExists)};
  ValidateNodeSelectorTerm(t, "t", &errs);
  ASSERT_EQ(errs.size(), 5u);
  EXPECT_EQ(errs[0].path, "t.matchExpressions[1].values[0]");
  EXPECT_EQ(errs[1].path, "t.matchExpressions[2].values");
  EXPECT_EQ(errs[2].path, "t.matchFields[1].values");
  EXPECT_EQ(errs[3].path, "t.matchFields[2].key");
  EXPECT_EQ(errs[4].path, "t.matchFields[2].operator");
}

}  // namespace
}  // namespace tephra::core
