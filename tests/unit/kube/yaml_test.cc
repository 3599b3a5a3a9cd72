// The YAML <-> JSON adapter (tephra/kube/yaml.h): kubectl's scalar resolution, multi-document streams,
// errors naming file and document, and the round trip of JsonToYaml.
#include "tephra/kube/yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tephra::kube {
namespace {

using api::json;
using ::testing::HasSubstr;

TEST(Yaml, ScalarsResolveLikeKubectl) {
  auto docs = YamlDocumentsToJson(
      "a: 1\nb: -0x10\nc: 1.5\nd: true\ne: yes\nf: off\ng: ~\nh:\ni: '1'\nj: \"true\"\nk: text\nl: 010\n"
      "m: 2023-11-14T22:13:20Z\nn: !!str 12\no: 1e3\np: 9223372036854775807\n",
      "x.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 1u);
  const json& d = (*docs)[0];
  EXPECT_EQ(d["a"], 1);
  EXPECT_EQ(d["b"], -16);
  EXPECT_EQ(d["c"], 1.5);
  EXPECT_EQ(d["d"], true);
  EXPECT_EQ(d["e"], true);
  EXPECT_EQ(d["f"], false);
  EXPECT_TRUE(d["g"].is_null());
  EXPECT_TRUE(d["h"].is_null());
  EXPECT_EQ(d["i"], "1");
  EXPECT_EQ(d["j"], "true");
  EXPECT_EQ(d["k"], "text");
  EXPECT_EQ(d["l"], 8);
  EXPECT_EQ(d["m"], "2023-11-14T22:13:20Z");
  EXPECT_EQ(d["n"], "12");
  EXPECT_EQ(d["o"], 1000.0);
  EXPECT_EQ(d["p"], INT64_MAX);
}

TEST(Yaml, MultipleDocumentsSkipEmptyOnes) {
  auto docs = YamlDocumentsToJson("---\nkind: A\n---\n# only a comment\n---\nkind: B\nlist: [1, {x: z}]\n---\n", "m.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0]["kind"], "A");
  EXPECT_EQ((*docs)[1]["list"], json::parse(R"([1, {"x": "z"}])"));
}

TEST(Yaml, JsonIsAccepted) {
  auto docs = YamlDocumentsToJson(R"({"kind": "Job", "spec": {"replicas": 2, "on": "yes"}})", "j.json");
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ((*docs)[0]["spec"]["replicas"], 2);
  EXPECT_EQ((*docs)[0]["spec"]["on"], "yes");
}

TEST(Yaml, ErrorsNameFileAndDocument) {
  auto bad = YamlDocumentsToJson("kind: A\n---\nkind: B\n---\nspec: [unclosed\n", "jobs.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("jobs.yaml: document 3: "));
  EXPECT_THAT(bad.status().message(), HasSubstr("line "));
  auto inf = YamlDocumentsToJson("kind: A\n---\nx: {y: .inf}\n", "f.yaml");
  ASSERT_FALSE(inf.ok());
  EXPECT_THAT(inf.status().message(), HasSubstr("f.yaml: document 2: x.y: .inf cannot be represented in JSON"));
}

TEST(Yaml, JsonToYamlRoundTrips) {
  json j = json::parse(R"({"a": "1", "b": "true", "c": "", "d": "plain", "e": [1, 2.5, false, null],
    "f": {}, "g": [], "h": "line1\nline2", "i": "2023-11-14T22:13:20Z", "k": "a: b", "l": 7})");
  std::string y = JsonToYaml(j);
  EXPECT_THAT(y, HasSubstr("a: \"1\"\n"));
  EXPECT_THAT(y, HasSubstr("d: plain\n"));
  EXPECT_THAT(y, HasSubstr("i: \"2023-11-14T22:13:20Z\"\n"));
  auto back = YamlDocumentsToJson(y, "roundtrip");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << y;
  EXPECT_EQ((*back)[0], j) << y;
}

}  // namespace
}  // namespace tephra::kube
