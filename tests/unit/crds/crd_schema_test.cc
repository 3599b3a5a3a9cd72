// Checks the CRDs in crds/ against the rules that make them installable on Kubernetes 1.20 and later
// (structural schemas, no CEL, no defaults under preserve-unknown-fields), against the Volcano CRD
// catalogue (names, scope, subresources, printer columns), and against the example manifests in
// crds/examples/: every field of every example must be declared by the schema (or sit under a
// preserve-unknown-fields node), otherwise the API server would silently prune it.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tephra::crds {
namespace {

namespace fs = std::filesystem;

fs::path CrdDir() { return fs::path(TEPHRA_SOURCE_DIR) / "crds"; }
fs::path ExampleDir() { return CrdDir() / "examples"; }

bool IsManifestFile(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

// Files kubectl would read for `kubectl apply -f <dir>` (no recursion), sorted for stable output.
std::vector<fs::path> ManifestFiles(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && IsManifestFile(e.path())) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<YAML::Node> LoadDocs(const fs::path& p) {
  std::vector<YAML::Node> docs;
  for (auto& d : YAML::LoadAllFromFile(p.string())) {
    if (d.IsDefined() && !d.IsNull()) docs.push_back(d);
  }
  return docs;
}

bool Truthy(const YAML::Node& n) { return n && n.IsScalar() && n.as<std::string>() == "true"; }

// One CRD of the catalogue in docs/volcano-behaviour.md, "CRD catalogue".
struct Column {
  std::string name, json_path, type;
  int priority;
};
struct Expected {
  std::string group, version, kind, plural;
  std::vector<std::string> short_names;
  std::string scope;
  bool status_subresource;
  std::vector<Column> columns;
};

const std::vector<Expected>& Catalogue() {
  static const auto* cat = new std::vector<Expected>{
      {"batch.volcano.sh", "v1alpha1", "Job", "jobs", {"vcjob", "vj"}, "Namespaced", true,
       {{"STATUS", ".status.state.phase", "string", 0},
        {"minAvailable", ".status.minAvailable", "integer", 0},
        {"RUNNINGS", ".status.running", "integer", 0},
        {"AGE", ".metadata.creationTimestamp", "date", 0},
        {"QUEUE", ".spec.queue", "string", 1}}},
      {"batch.volcano.sh", "v1alpha1", "CronJob", "cronjobs", {"cronvcjob", "cronvj"}, "Namespaced", true, {}},
      {"bus.volcano.sh", "v1alpha1", "Command", "commands", {}, "Namespaced", false, {}},
      {"scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups", {"pg", "podgroup-v1beta1"}, "Namespaced",
       false,
       {{"STATUS", ".status.phase", "string", 0},
        {"minMember", ".spec.minMember", "integer", 0},
        {"RUNNINGS", ".status.running", "integer", 0},
        {"AGE", ".metadata.creationTimestamp", "date", 0},
        {"QUEUE", ".spec.queue", "string", 1}}},
      {"scheduling.volcano.sh", "v1beta1", "Queue", "queues", {"q", "queue-v1beta1"}, "Cluster", true,
       {{"PARENT", ".spec.parent", "string", 0}}},
      {"flow.volcano.sh", "v1alpha1", "JobFlow", "jobflows", {"jf"}, "Namespaced", true,
       {{"Status", ".status.state.phase", "string", 0}, {"Age", ".metadata.creationTimestamp", "date", 0}}},
      {"flow.volcano.sh", "v1alpha1", "JobTemplate", "jobtemplates", {"jt"}, "Namespaced", true, {}},
      {"topology.volcano.sh", "v1alpha1", "HyperNode", "hypernodes", {"hn"}, "Cluster", true,
       {{"Tier", ".spec.tier", "integer", 0},
        {"TierName", ".spec.tierName", "string", 0},
        {"NodeCount", ".status.nodeCount", "integer", 0},
        {"Age", ".metadata.creationTimestamp", "date", 0}}},
  };
  return *cat;
}

struct Crd {
  fs::path file;
  YAML::Node doc;
};

// Key "group/version/Kind" -> CRD, for every CRD file in crds/.
std::map<std::string, Crd> LoadCrds() {
  std::map<std::string, Crd> out;
  for (const auto& f : ManifestFiles(CrdDir())) {
    for (const auto& d : LoadDocs(f)) {
      const auto spec = d["spec"];
      for (const auto& v : spec["versions"]) {
        out[spec["group"].as<std::string>() + "/" + v["name"].as<std::string>() + "/" +
            spec["names"]["kind"].as<std::string>()] = {f, d};
      }
    }
  }
  return out;
}

YAML::Node SchemaOf(const YAML::Node& crd) { return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]; }

// ---------------------------------------------------------------------------------------------
// Structural-schema check.

// Schema keywords understood by the v1.20 API server that we allow ourselves. Anything else (notably
// x-kubernetes-validations, CEL, added in 1.23) is rejected so the CRDs keep installing on 1.20.
const std::set<std::string>& AllowedSchemaKeys() {
  static const auto* keys = new std::set<std::string>{
      "type", "format", "description", "properties", "items", "additionalProperties", "required", "enum",
      "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "anyOf", "default",
      "nullable", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
      "x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
      "x-kubernetes-map-type"};
  return *keys;
}

bool IsIntOrString(const YAML::Node& s) { return Truthy(s["x-kubernetes-int-or-string"]); }
bool IsPreserve(const YAML::Node& s) { return Truthy(s["x-kubernetes-preserve-unknown-fields"]); }

// Does a YAML scalar parse as a JSON integer once kubectl converts the manifest?
bool PlainInteger(const YAML::Node& n) {
  static const std::regex re("[-+]?(0|[1-9][0-9]*)");
  return n.IsScalar() && n.Tag() != "!" && std::regex_match(n.Scalar(), re);
}

// YAML 1.1 (what kubectl's YAML decoder implements) resolves these plain scalars to non-strings.
bool PlainNonString(const YAML::Node& n) {
  static const std::regex re(
      "(true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|~|null|Null|NULL|"
      "[-+]?(0|[1-9][0-9]*)|[-+]?([0-9]*\\.[0-9]+|[0-9]+\\.[0-9]*)([eE][-+]?[0-9]+)?)");
  return n.IsScalar() && n.Tag() != "!" && (n.Scalar().empty() || std::regex_match(n.Scalar(), re));
}

void CheckValueAgainstLeaf(const YAML::Node& value, const YAML::Node& schema, const std::string& path,
                           std::vector<std::string>* errors);

void CheckStructural(const YAML::Node& s, const std::string& path, bool under_preserve,
                     std::vector<std::string>* errors) {
  if (!s.IsMap()) {
    errors->push_back(path + ": schema node is not a map");
    return;
  }
  for (const auto& kv : s) {
    const auto key = kv.first.as<std::string>();
    if (!AllowedSchemaKeys().count(key)) errors->push_back(path + ": keyword not usable on Kubernetes 1.20: " + key);
  }
  const bool preserve = IsPreserve(s);
  if (s["default"] && (under_preserve || preserve)) {
    // Kubernetes 1.20 refuses the whole CRD when a default sits in a preserve-unknown-fields subtree.
    errors->push_back(path + ": default inside an x-kubernetes-preserve-unknown-fields subtree");
  }
  if (IsIntOrString(s)) {
    const auto any = s["anyOf"];
    const bool canonical = any && any.IsSequence() && any.size() == 2 && any[0]["type"] &&
                           any[0]["type"].as<std::string>() == "integer" && any[1]["type"] &&
                           any[1]["type"].as<std::string>() == "string";
    if (!canonical) errors->push_back(path + ": int-or-string must be anyOf [integer, string]");
    if (s["pattern"] || (any && any.IsSequence() && std::any_of(any.begin(), any.end(), [](const YAML::Node& a) {
                           return static_cast<bool>(a["pattern"]);
                         }))) {
      errors->push_back(path + ": quantity schema must not carry a pattern");
    }
    if (s["type"]) errors->push_back(path + ": int-or-string must not also set type");
  } else if (!s["type"]) {
    errors->push_back(path + ": missing type (not structural)");
  } else if (s["anyOf"]) {
    errors->push_back(path + ": anyOf only allowed for int-or-string quantities");
  }
  if (preserve && (!s["type"] || s["type"].as<std::string>() != "object")) {
    errors->push_back(path + ": preserve-unknown-fields node must be type: object");
  }
  if (s["default"] && !under_preserve && !preserve) {
    // The API server also rejects a CRD whose default does not validate against its own schema.
    std::vector<std::string> derrs;
    CheckValueAgainstLeaf(s["default"], s, path + "(default)", &derrs);
    errors->insert(errors->end(), derrs.begin(), derrs.end());
  }
  const std::string type = s["type"] ? s["type"].as<std::string>() : "";
  if (s["properties"]) {
    if (type != "object") errors->push_back(path + ": properties on a non-object");
    for (const auto& kv : s["properties"]) {
      CheckStructural(kv.second, path + "." + kv.first.as<std::string>(), under_preserve || preserve, errors);
    }
  }
  if (s["additionalProperties"]) {
    if (s["properties"]) errors->push_back(path + ": both properties and additionalProperties");
    if (s["additionalProperties"].IsMap()) {
      CheckStructural(s["additionalProperties"], path + ".*", under_preserve || preserve, errors);
    }
  }
  if (type == "array") {
    if (!s["items"]) errors->push_back(path + ": array without items");
  }
  if (s["items"]) CheckStructural(s["items"], path + "[]", under_preserve || preserve, errors);
}

// Validates a scalar/leaf value the way the API server would after YAML->JSON conversion.
void CheckValueAgainstLeaf(const YAML::Node& value, const YAML::Node& schema, const std::string& path,
                           std::vector<std::string>* errors) {
  if (IsIntOrString(schema)) {
    if (!value.IsScalar()) errors->push_back(path + ": quantity must be a scalar");
    return;
  }
  const std::string type = schema["type"] ? schema["type"].as<std::string>() : "";
  if (type == "string") {
    if (!value.IsScalar() || PlainNonString(value)) {
      errors->push_back(path + ": not a string (quote it)");
      return;
    }
  } else if (type == "integer") {
    if (!PlainInteger(value)) {
      errors->push_back(path + ": not an integer");
      return;
    }
    const long long v = std::stoll(value.Scalar());
    if (schema["minimum"] && v < schema["minimum"].as<long long>()) errors->push_back(path + ": below minimum");
    if (schema["maximum"] && v > schema["maximum"].as<long long>()) errors->push_back(path + ": above maximum");
  } else if (type == "boolean") {
    if (!value.IsScalar() || value.Tag() == "!" || (value.Scalar() != "true" && value.Scalar() != "false")) {
      errors->push_back(path + ": not a boolean");
    }
  } else if (type == "object") {
    if (!value.IsMap()) errors->push_back(path + ": not an object");
  } else if (type == "array") {
    if (!value.IsSequence()) errors->push_back(path + ": not an array");
  }
  if (schema["enum"] && value.IsScalar()) {
    bool found = false;
    for (const auto& e : schema["enum"]) found = found || e.as<std::string>() == value.Scalar();
    if (!found) errors->push_back(path + ": value '" + value.Scalar() + "' not in enum");
  }
}

// ---------------------------------------------------------------------------------------------
// No-pruning check: walk a manifest alongside its schema.

void CheckNoPruning(const YAML::Node& value, const YAML::Node& s, const std::string& path,
                    std::set<std::string>* seen, std::vector<std::string>* errors) {
  if (seen) seen->insert(path);
  if (IsPreserve(s)) {
    if (!value.IsMap()) errors->push_back(path + ": not an object");
    return;  // stored verbatim by the API server
  }
  CheckValueAgainstLeaf(value, s, path, errors);
  if (value.IsMap() && s["type"] && s["type"].as<std::string>() == "object") {
    for (const auto& kv : value) {
      const auto key = kv.first.as<std::string>();
      // Top-level metadata is ObjectMeta, handled by the API server itself, not by the CRD schema.
      if (path.empty() && key == "metadata") {
        if (seen) seen->insert(".metadata");
        continue;
      }
      if (s["properties"] && s["properties"][key]) {
        CheckNoPruning(kv.second, s["properties"][key], path + "." + key, seen, errors);
      } else if (s["additionalProperties"] && s["additionalProperties"].IsMap()) {
        CheckNoPruning(kv.second, s["additionalProperties"], path + ".*", seen, errors);
      } else {
        errors->push_back(path + "." + key + ": not in schema, would be pruned");
      }
    }
    if (s["required"]) {
      for (const auto& r : s["required"]) {
        if (!value[r.as<std::string>()]) errors->push_back(path + "." + r.as<std::string>() + ": required, missing");
      }
    }
  } else if (value.IsSequence() && s["items"]) {
    for (const auto& item : value) CheckNoPruning(item, s["items"], path + "[]", seen, errors);
  }
}

// Every declared property path of a schema (".spec.tasks[].name", ".spec.plugins.*"), not descending
// into preserve-unknown-fields nodes, nor into the subtrees listed in `stop`.
void SchemaPaths(const YAML::Node& s, const std::string& path, const std::set<std::string>& stop,
                 std::set<std::string>* out) {
  out->insert(path);
  if (IsPreserve(s) || stop.count(path)) return;
  if (s["properties"]) {
    for (const auto& kv : s["properties"]) {
      SchemaPaths(kv.second, path + "." + kv.first.as<std::string>(), stop, out);
    }
  }
  if (s["additionalProperties"] && s["additionalProperties"].IsMap()) {
    SchemaPaths(s["additionalProperties"], path + ".*", stop, out);
  }
  if (s["items"]) SchemaPaths(s["items"], path + "[]", stop, out);
}

// Structural equality of two YAML trees (map order ignored); `ignore_defaults` skips `default` keys.
bool SameTree(const YAML::Node& a, const YAML::Node& b, bool ignore_defaults) {
  if (a.Type() != b.Type()) return false;
  if (a.IsScalar()) return a.Scalar() == b.Scalar();
  if (a.IsSequence()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameTree(a[i], b[i], ignore_defaults)) return false;
    }
    return true;
  }
  if (a.IsMap()) {
    auto keys = [&](const YAML::Node& n) {
      std::set<std::string> k;
      for (const auto& kv : n) {
        const auto key = kv.first.as<std::string>();
        if (!(ignore_defaults && key == "default")) k.insert(key);
      }
      return k;
    };
    const auto ka = keys(a);
    if (ka != keys(b)) return false;
    for (const auto& k : ka) {
      if (!SameTree(a[k], b[k], ignore_defaults)) return false;
    }
    return true;
  }
  return true;
}

bool HasKeyAnywhere(const YAML::Node& n, const std::string& key) {
  if (n.IsMap()) {
    for (const auto& kv : n) {
      if (kv.first.as<std::string>() == key || HasKeyAnywhere(kv.second, key)) return true;
    }
  } else if (n.IsSequence()) {
    for (const auto& v : n) {
      if (HasKeyAnywhere(v, key)) return true;
    }
  }
  return false;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += "\n  " + e;
  return s;
}

// Example documents grouped by "group/version/Kind".
std::map<std::string, std::vector<std::pair<std::string, YAML::Node>>> LoadExamples() {
  std::map<std::string, std::vector<std::pair<std::string, YAML::Node>>> out;
  for (const auto& f : ManifestFiles(ExampleDir())) {
    for (const auto& d : LoadDocs(f)) {
      const auto api_version = d["apiVersion"].as<std::string>();
      // Built-in prerequisites (PriorityClass, PVC) are validated by the API server, not by our CRDs.
      if (api_version.find(".volcano.sh/") == std::string::npos) continue;
      out[api_version + "/" + d["kind"].as<std::string>()].push_back({f.filename().string(), d});
    }
  }
  return out;
}

std::vector<std::string> PruningErrors(const YAML::Node& schema, const YAML::Node& manifest) {
  std::vector<std::string> errors;
  CheckNoPruning(manifest, schema, "", nullptr, &errors);
  return errors;
}

// ---------------------------------------------------------------------------------------------

TEST(CrdDirTest, KubectlApplyOnDirectorySeesOnlyOneCrdPerFile) {
  const auto files = ManifestFiles(CrdDir());
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    const auto docs = LoadDocs(f);
    ASSERT_EQ(docs.size(), 1u) << f;
    EXPECT_EQ(docs[0]["apiVersion"].as<std::string>(), "apiextensions.k8s.io/v1") << f;
    EXPECT_EQ(docs[0]["kind"].as<std::string>(), "CustomResourceDefinition") << f;
  }
}

TEST(CrdCatalogueTest, NamesScopeSubresourcesAndColumnsMatchVolcano) {
  const auto crds = LoadCrds();
  EXPECT_EQ(crds.size(), Catalogue().size());
  for (const auto& e : Catalogue()) {
    const auto it = crds.find(e.group + "/" + e.version + "/" + e.kind);
    ASSERT_NE(it, crds.end()) << e.kind;
    const auto& d = it->second.doc;
    SCOPED_TRACE(e.kind);
    EXPECT_EQ(d["metadata"]["name"].as<std::string>(), e.plural + "." + e.group);
    EXPECT_EQ(d["metadata"]["annotations"]["helm.sh/resource-policy"].as<std::string>(), "keep");
    const auto spec = d["spec"];
    EXPECT_EQ(spec["group"].as<std::string>(), e.group);
    EXPECT_EQ(spec["scope"].as<std::string>(), e.scope);
    EXPECT_EQ(spec["names"]["plural"].as<std::string>(), e.plural);
    EXPECT_EQ(spec["names"]["kind"].as<std::string>(), e.kind);
    std::vector<std::string> shorts;
    if (spec["names"]["shortNames"]) shorts = spec["names"]["shortNames"].as<std::vector<std::string>>();
    EXPECT_EQ(shorts, e.short_names);
    ASSERT_EQ(spec["versions"].size(), 1u);
    const auto v = spec["versions"][0];
    EXPECT_EQ(v["name"].as<std::string>(), e.version);
    EXPECT_TRUE(Truthy(v["served"]));
    EXPECT_TRUE(Truthy(v["storage"]));
    ASSERT_TRUE(v["subresources"].IsMap());
    EXPECT_EQ(static_cast<bool>(v["subresources"]["status"]), e.status_subresource);
    EXPECT_FALSE(v["subresources"]["scale"]);
    const auto cols = v["additionalPrinterColumns"];
    ASSERT_EQ(cols ? cols.size() : 0u, e.columns.size());
    for (size_t i = 0; i < e.columns.size(); ++i) {
      EXPECT_EQ(cols[i]["name"].as<std::string>(), e.columns[i].name);
      EXPECT_EQ(cols[i]["jsonPath"].as<std::string>(), e.columns[i].json_path);
      EXPECT_EQ(cols[i]["type"].as<std::string>(), e.columns[i].type);
      EXPECT_EQ(cols[i]["priority"] ? cols[i]["priority"].as<int>() : 0, e.columns[i].priority);
    }
    // Version keys known to the 1.20 API server only.
    for (const auto& kv : v) {
      static const std::set<std::string> allowed = {"name",          "served",       "storage",
                                                    "schema",        "subresources", "additionalPrinterColumns",
                                                    "deprecated",    "deprecationWarning"};
      EXPECT_TRUE(allowed.count(kv.first.as<std::string>())) << kv.first.as<std::string>();
    }
  }
}

TEST(CrdStructuralTest, EverySchemaIsStructuralAndInstallableOn120) {
  for (const auto& [key, crd] : LoadCrds()) {
    SCOPED_TRACE(key);
    const auto schema = SchemaOf(crd.doc);
    ASSERT_TRUE(schema.IsMap());
    EXPECT_FALSE(HasKeyAnywhere(crd.doc, "x-kubernetes-validations"));
    std::vector<std::string> errors;
    CheckStructural(schema, "", false, &errors);
    EXPECT_TRUE(errors.empty()) << Join(errors);
    // Root metadata may only be `type: object` (the API server owns ObjectMeta).
    const auto meta = schema["properties"]["metadata"];
    ASSERT_TRUE(meta);
    EXPECT_EQ(meta.size(), 1u);
    EXPECT_EQ(meta["type"].as<std::string>(), "object");
  }
}

TEST(CrdStructuralTest, PodTemplatesAreLeanPreserveUnknownObjects) {
  const auto crds = LoadCrds();
  auto at = [&](const std::string& key, const std::vector<std::string>& path) {
    YAML::Node n = SchemaOf(crds.at(key).doc);
    for (const auto& p : path) n = (p == "[]") ? n["items"] : n["properties"][p];
    return n;
  };
  const std::vector<YAML::Node> templates = {
      at("batch.volcano.sh/v1alpha1/Job", {"spec", "tasks", "[]", "template"}),
      at("flow.volcano.sh/v1alpha1/JobTemplate", {"spec", "tasks", "[]", "template"}),
      at("flow.volcano.sh/v1alpha1/JobFlow", {"spec", "flows", "[]", "patch", "jobSpec", "tasks", "[]", "template"}),
      at("batch.volcano.sh/v1alpha1/CronJob", {"spec", "jobTemplate", "spec", "tasks", "[]", "template"}),
  };
  for (const auto& t : templates) {
    ASSERT_TRUE(t.IsMap());
    EXPECT_EQ(t["type"].as<std::string>(), "object");
    EXPECT_TRUE(IsPreserve(t));
    EXPECT_FALSE(t["properties"]);
    EXPECT_FALSE(HasKeyAnywhere(t, "default"));
  }
}

// JobTemplate.spec, CronJob.spec.jobTemplate.spec and JobFlow patch.jobSpec are all Volcano JobSpecs;
// keeping them identical to Job.spec lets the Job examples cover them.
TEST(CrdStructuralTest, EmbeddedJobSpecsEqualJobSpec) {
  const auto crds = LoadCrds();
  const auto job = SchemaOf(crds.at("batch.volcano.sh/v1alpha1/Job").doc)["properties"]["spec"];
  const auto jt = SchemaOf(crds.at("flow.volcano.sh/v1alpha1/JobTemplate").doc)["properties"]["spec"];
  const auto cron =
      SchemaOf(crds.at("batch.volcano.sh/v1alpha1/CronJob").doc)["properties"]["spec"]["properties"]["jobTemplate"]
          ["properties"]["spec"];
  const auto patch = SchemaOf(crds.at("flow.volcano.sh/v1alpha1/JobFlow").doc)["properties"]["spec"]["properties"]
                                                                             ["flows"]["items"]["properties"]["patch"]
                                                                             ["properties"]["jobSpec"];
  EXPECT_TRUE(SameTree(job, jt, false));
  EXPECT_TRUE(SameTree(job, cron, false));
  // A patch must not gain values its author did not write, so it carries no defaults.
  EXPECT_TRUE(SameTree(job, patch, true));
  EXPECT_FALSE(HasKeyAnywhere(patch, "default"));
}

TEST(CrdDefaultsTest, DefaultsAreExactlyVolcanoOnes) {
  const auto crds = LoadCrds();
  const auto job = SchemaOf(crds.at("batch.volcano.sh/v1alpha1/Job").doc)["properties"]["spec"]["properties"];
  EXPECT_EQ(job["maxRetry"]["default"].as<int>(), 3);
  EXPECT_EQ(job["maxRetry"]["minimum"].as<int>(), 0);
  EXPECT_EQ(job["queue"]["default"].as<std::string>(), "default");
  EXPECT_EQ(job["networkTopology"]["properties"]["mode"]["default"].as<std::string>(), "hard");
  EXPECT_FALSE(job["minAvailable"]["default"]);
  EXPECT_FALSE(job["networkTopology"]["properties"]["highestTierAllowed"]["default"]);
  // Task maxRetry -1 means unlimited for TaskFailed; the CRD must accept it.
  EXPECT_EQ(job["tasks"]["items"]["properties"]["maxRetry"]["minimum"].as<int>(), -1);
  const auto pg = SchemaOf(crds.at("scheduling.volcano.sh/v1beta1/PodGroup").doc)["properties"]["spec"]["properties"];
  EXPECT_EQ(pg["queue"]["default"].as<std::string>(), "default");
  // Queue weight 0 is turned into 1 by the mutating webhook, so the schema must let 0 through.
  const auto q = SchemaOf(crds.at("scheduling.volcano.sh/v1beta1/Queue").doc)["properties"]["spec"]["properties"];
  EXPECT_EQ(q["weight"]["minimum"].as<int>(), 0);
  EXPECT_FALSE(q["weight"]["default"]);
}

void DefaultPaths(const YAML::Node& s, const std::string& path, std::set<std::string>* out) {
  if (s["default"]) out->insert(path + "=" + s["default"].as<std::string>());
  if (s["properties"]) {
    for (const auto& kv : s["properties"]) DefaultPaths(kv.second, path + "." + kv.first.as<std::string>(), out);
  }
  if (s["additionalProperties"] && s["additionalProperties"].IsMap()) {
    DefaultPaths(s["additionalProperties"], path + ".*", out);
  }
  if (s["items"]) DefaultPaths(s["items"], path + "[]", out);
}

// A CRD default is applied by the API server to every stored object, so an extra one changes what
// Volcano clients read back. Only the defaults Volcano's own CRDs declare are allowed.
TEST(CrdDefaultsTest, NoDefaultsBeyondVolcanoOnes) {
  auto job_spec = [](const std::string& prefix) {
    return std::set<std::string>{prefix + ".queue=default", prefix + ".maxRetry=3",
                                 prefix + ".networkTopology.mode=hard",
                                 prefix + ".tasks[].partitionPolicy.networkTopology.mode=hard",
                                 prefix + ".tasks[].partitionPolicy.minPartitions=0"};
  };
  auto cron = job_spec(".spec.jobTemplate.spec");
  cron.insert({".spec.concurrencyPolicy=Allow", ".spec.suspend=false", ".spec.successfulJobsHistoryLimit=3",
               ".spec.failedJobsHistoryLimit=1"});
  const std::map<std::string, std::set<std::string>> expected = {
      {"batch.volcano.sh/v1alpha1/Job", job_spec(".spec")},
      {"flow.volcano.sh/v1alpha1/JobTemplate", job_spec(".spec")},
      {"batch.volcano.sh/v1alpha1/CronJob", cron},
      {"bus.volcano.sh/v1alpha1/Command", {}},
      {"flow.volcano.sh/v1alpha1/JobFlow", {}},
      {"topology.volcano.sh/v1alpha1/HyperNode", {}},
      {"scheduling.volcano.sh/v1beta1/Queue", {".spec.dequeueStrategy=traverse"}},
      {"scheduling.volcano.sh/v1beta1/PodGroup",
       {".spec.queue=default", ".spec.networkTopology.mode=hard", ".spec.subGroupPolicy[].networkTopology.mode=hard",
        ".spec.subGroupPolicy[].subGroupSize=1", ".spec.subGroupPolicy[].minSubGroups=0"}},
  };
  const auto crds = LoadCrds();
  ASSERT_EQ(crds.size(), expected.size());
  for (const auto& [key, crd] : crds) {
    std::set<std::string> got;
    DefaultPaths(SchemaOf(crd.doc), "", &got);
    ASSERT_TRUE(expected.count(key)) << key;
    EXPECT_EQ(got, expected.at(key)) << key;
  }
}

void EnumPaths(const YAML::Node& s, const std::string& path, std::map<std::string, std::string>* out) {
  if (s["enum"]) {
    std::string values;
    for (const auto& e : s["enum"]) values += (values.empty() ? "" : "|") + e.as<std::string>();
    (*out)[path] = values;
  }
  if (s["properties"]) {
    for (const auto& kv : s["properties"]) EnumPaths(kv.second, path + "." + kv.first.as<std::string>(), out);
  }
  if (s["additionalProperties"] && s["additionalProperties"].IsMap()) {
    EnumPaths(s["additionalProperties"], path + ".*", out);
  }
  if (s["items"]) EnumPaths(s["items"], path + "[]", out);
}

// An enum rejects at the API server, so only the closed sets Volcano's own CRDs enumerate are enums here
// (dependsOn.iteration, jobRetainPolicy, policy actions... are free strings there).
TEST(CrdEnumsTest, OnlyVolcanoEnums) {
  const std::string events =
      "*|PodPending|PodRunning|PodFailed|PodEvicted|Unknown|TaskCompleted|OutOfSync|CommandIssued|JobUpdated|TaskFailed";
  const std::map<std::string, std::string> by_suffix = {
      {".networkTopology.mode", "hard|soft"},
      {".policies[].event", events},
      {".policies[].events[]", events},
      {".tasks[].topologyPolicy", "none|best-effort|restricted|single-numa-node"},
  };
  int seen = 0;
  for (const auto& [key, crd] : LoadCrds()) {
    std::map<std::string, std::string> enums;
    EnumPaths(SchemaOf(crd.doc), "", &enums);
    for (const auto& [path, values] : enums) {
      ++seen;
      const std::string full = key + path;
      if (full == "topology.volcano.sh/v1alpha1/HyperNode.spec.members[].type") {
        EXPECT_EQ(values, "Node|HyperNode");
      } else if (full == "batch.volcano.sh/v1alpha1/CronJob.spec.concurrencyPolicy") {
        EXPECT_EQ(values, "Allow|Forbid|Replace");
      } else if (full == "scheduling.volcano.sh/v1beta1/Queue.spec.dequeueStrategy") {
        EXPECT_EQ(values, "fifo|traverse");
      } else {
        // A named copy: clang 14 (the sanitizer builds) cannot capture a structured binding in a lambda.
        const std::string& enum_path = path;
        const auto it = std::find_if(by_suffix.begin(), by_suffix.end(),
                                     [&](const auto& kv) { return enum_path.ends_with(kv.first); });
        ASSERT_NE(it, by_suffix.end()) << "unexpected enum at " << full;
        EXPECT_EQ(values, it->second) << full;
      }
    }
  }
  EXPECT_GT(seen, 0);
}

// Volcano's CRDs refuse at create time what would otherwise be stored and fail later: a task name that is
// not a DNS label is stored, and then every pod creation fails (its name is part of the pod's name and
// labels). The same patterns and lengths are here, in every embedded JobSpec.
TEST(CrdPatternsTest, TaskNamesMustBeDnsLabelsLikeVolcano) {
  const auto crds = LoadCrds();
  auto job_spec = SchemaOf(crds.at("batch.volcano.sh/v1alpha1/Job").doc)["properties"]["spec"]["properties"];
  const auto name = job_spec["tasks"]["items"]["properties"]["name"];
  ASSERT_TRUE(name["pattern"]) << "tasks[].name has no pattern";
  EXPECT_EQ(name["maxLength"].as<int>(), 63);
  // Kubernetes evaluates `pattern` with Go's regexp; this one is in the common subset of ECMAScript.
  const std::regex re(name["pattern"].as<std::string>());
  for (const char* ok : {"worker", "ps-0", "a", "0"}) EXPECT_TRUE(std::regex_search(ok, re)) << ok;
  for (const char* bad : {"Worker", "ps_0", "-a", "a-", "a.b", ""}) EXPECT_FALSE(std::regex_search(bad, re)) << bad;
  EXPECT_EQ(job_spec["tasks"]["minItems"].as<int>(), 1);
  const auto queue = job_spec["queue"];
  ASSERT_TRUE(queue["pattern"]);
  EXPECT_FALSE(std::regex_search("Research_Q", std::regex(queue["pattern"].as<std::string>())));
  EXPECT_TRUE(std::regex_search("research.q-1", std::regex(queue["pattern"].as<std::string>())));
  const auto mount = job_spec["volumes"]["items"]["properties"]["mountPath"];
  EXPECT_EQ(mount["minLength"].as<int>(), 1);
  EXPECT_FALSE(std::regex_search("/data:ro", std::regex(mount["pattern"].as<std::string>())));
  EXPECT_EQ(job_spec["priorityClassName"]["maxLength"].as<int>(), 253);
  const auto pg = SchemaOf(crds.at("scheduling.volcano.sh/v1beta1/PodGroup").doc)["properties"]["spec"]["properties"];
  EXPECT_TRUE(pg["queue"]["pattern"]);
  EXPECT_EQ(pg["subGroupPolicy"]["items"]["properties"]["subGroupSize"]["minimum"].as<int>(), 1);
  const auto hn = SchemaOf(crds.at("topology.volcano.sh/v1alpha1/HyperNode").doc)["properties"]["spec"]["properties"];
  EXPECT_EQ(hn["members"]["minItems"].as<int>(), 1);
}

TEST(CrdPruningTest, EveryExampleFieldIsDeclared) {
  const auto crds = LoadCrds();
  const auto examples = LoadExamples();
  ASSERT_FALSE(examples.empty());
  for (const auto& [key, docs] : examples) {
    const auto it = crds.find(key);
    ASSERT_NE(it, crds.end()) << "example of unknown kind " << key;
    for (const auto& [file, doc] : docs) {
      const auto errors = PruningErrors(SchemaOf(it->second.doc), doc);
      EXPECT_TRUE(errors.empty()) << file << ":" << Join(errors);
    }
  }
}

// The examples are what the e2e no-pruning check round-trips: together they must use every spec field
// (status is written by controllers, and JobSpec copies are covered through Job, see above).
TEST(CrdPruningTest, ExamplesUseEverySpecField) {
  const auto crds = LoadCrds();
  const auto examples = LoadExamples();
  const std::set<std::string> stop = {".status", ".spec.flows[].patch.jobSpec", ".spec.jobTemplate.spec"};
  for (const auto& [key, crd] : crds) {
    SCOPED_TRACE(key);
    const auto schema = SchemaOf(crd.doc);
    std::set<std::string> declared;
    SchemaPaths(schema, "", stop, &declared);
    if (key.ends_with("/JobTemplate")) {
      // spec is a JobSpec, checked equal to Job.spec.
      std::erase_if(declared, [](const std::string& p) { return p.starts_with(".spec."); });
    }
    std::set<std::string> seen;
    const auto it = examples.find(key);
    ASSERT_NE(it, examples.end()) << "no example for " << key;
    for (const auto& [file, doc] : it->second) {
      std::vector<std::string> ignored;
      CheckNoPruning(doc, schema, "", &seen, &ignored);
    }
    std::vector<std::string> missing;
    for (const auto& p : declared) {
      bool under_stop = false;
      for (const auto& s : stop) under_stop = under_stop || (p.starts_with(s) && p != s);
      if (!under_stop && !p.starts_with(".status") && !seen.count(p)) missing.push_back(p);
    }
    EXPECT_TRUE(missing.empty()) << "fields no example uses:" << Join(missing);
  }
}

// ---------------------------------------------------------------------------------------------
// The checks above must be able to fail: mutate a loaded CRD and expect the right complaint.

TEST(CrdCheckerSelfTest, DeletingAPropertyIsReportedAsPruning) {
  const auto crds = LoadCrds();
  YAML::Node schema = YAML::Clone(SchemaOf(crds.at("batch.volcano.sh/v1alpha1/Job").doc));
  const auto mpi = LoadDocs(ExampleDir() / "mpi-job.yaml").at(0);
  ASSERT_TRUE(PruningErrors(schema, mpi).empty());
  schema["properties"]["spec"]["properties"].remove("policies");
  const auto errors = PruningErrors(schema, mpi);
  ASSERT_EQ(errors.size(), 1u) << Join(errors);
  EXPECT_EQ(errors[0], ".spec.policies: not in schema, would be pruned");
}

TEST(CrdCheckerSelfTest, DefaultUnderPreserveUnknownIsRejected) {
  const auto crds = LoadCrds();
  YAML::Node schema = YAML::Clone(SchemaOf(crds.at("batch.volcano.sh/v1alpha1/Job").doc));
  std::vector<std::string> errors;
  CheckStructural(schema, "", false, &errors);
  ASSERT_TRUE(errors.empty()) << Join(errors);
  YAML::Node tmpl = schema["properties"]["spec"]["properties"]["tasks"]["items"]["properties"]["template"];
  tmpl["properties"]["spec"]["type"] = "object";
  tmpl["properties"]["spec"]["default"] = YAML::Load("{}");
  CheckStructural(schema, "", false, &errors);
  ASSERT_EQ(errors.size(), 1u) << Join(errors);
  EXPECT_NE(errors[0].find("default inside"), std::string::npos);
}

TEST(CrdCheckerSelfTest, UntypedNodeCelAndBadValuesAreRejected) {
  YAML::Node s = YAML::Load(R"(
type: object
properties:
  a: {description: no type}
  b: {type: string, x-kubernetes-validations: [{rule: "self != ''"}]}
  q: {anyOf: [{type: integer}, {type: string}], x-kubernetes-int-or-string: true, pattern: "^[0-9]+$"}
  n: {type: integer, minimum: 1, default: 0}
)");
  std::vector<std::string> errors;
  CheckStructural(s, "", false, &errors);
  auto has = [&](const std::string& needle) {
    return std::any_of(errors.begin(), errors.end(), [&](const std::string& e) { return e.find(needle) != e.npos; });
  };
  EXPECT_TRUE(has(".a: missing type")) << Join(errors);
  EXPECT_TRUE(has(".b: keyword not usable on Kubernetes 1.20: x-kubernetes-validations")) << Join(errors);
  EXPECT_TRUE(has(".q: quantity schema must not carry a pattern")) << Join(errors);
  EXPECT_TRUE(has(".n(default): below minimum")) << Join(errors);

  const YAML::Node leaf = YAML::Load("{type: object, properties: {s: {type: string}, i: {type: integer, minimum: 0},"
                                     " e: {type: string, enum: [hard, soft]}}}");
  EXPECT_EQ(PruningErrors(leaf, YAML::Load("{s: 'on', i: 2, e: soft}")).size(), 0u);
  EXPECT_EQ(PruningErrors(leaf, YAML::Load("{s: on}")).size(), 1u);   // YAML 1.1 bool, not a string
  EXPECT_EQ(PruningErrors(leaf, YAML::Load("{i: -1}")).size(), 1u);   // below minimum
  EXPECT_EQ(PruningErrors(leaf, YAML::Load("{i: '2'}")).size(), 1u);  // quoted: a string
  EXPECT_EQ(PruningErrors(leaf, YAML::Load("{e: medium}")).size(), 1u);
  EXPECT_EQ(PruningErrors(leaf, YAML::Load("{x: 1}")).size(), 1u);   // undeclared -> pruned
}

}  // namespace
}  // namespace tephra::crds
