// Deterministic mutation fuzzer over ParseJson and every kind's Decode (g++ has no libFuzzer).
//
// Seeds: tests/fuzz/corpus (deep nesting, unterminated documents, huge numbers, wrong types, ...) plus the
// api testdata manifests. Each iteration mutates a seed either as text (byte flips, splices, interesting
// tokens) or as a JSON tree (type changes, deletions, unknown keys), then parses and decodes it as every
// kind. Properties: nothing crashes or throws, and for every successful decode x, decode(encode(x))
// encodes to the same JSON as x. The RNG seed is fixed, so a failure reproduces exactly.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tephra/api/defaults.h"
#include "tephra/api/kinds.h"
#include "tephra/api/resources.h"
#include "tephra/api/validation.h"

namespace tephra::api {
namespace {

struct Kind {
  const char* name;
  // Returns false when `in` does not decode; otherwise checks the round-trip property.
  std::function<bool(const json& in)> check;
};

template <typename T>
bool CheckRoundTrip(const json& in) {
  StatusOr<T> x = FromJson<T>(in);
  if (!x.ok()) return false;
  json once = ToJson(*x);
  StatusOr<T> y = FromJson<T>(once);
  EXPECT_TRUE(y.ok()) << "re-decode failed: " << y.status() << "\n" << once.dump().substr(0, 2000);
  if (!y.ok()) return true;
  json twice = ToJson(*y);
  EXPECT_EQ(once, twice) << "not stable: " << json::diff(once, twice).dump().substr(0, 2000);
  return true;
}

// Pure functions over decoded objects must not crash either.
bool CheckJob(const json& in) {
  if (!CheckRoundTrip<Job>(in)) return false;
  Job job = *FromJson<Job>(in);
  FakeClusterLookup lookup;
  lookup.AddQueue("root").AddQueue("default", "root");
  (void)ValidateJobCreate(job, lookup);
  Job mutated = job;
  MutateJob(&mutated, {});
  (void)ValidateJobCreate(mutated, lookup);
  (void)ValidateJobUpdate(job, mutated);
  (void)MinResourcesForJob(mutated, [](std::string_view) { return std::optional<int32_t>(7); });
  (void)JsonPatchDiff(ToJson(job), ToJson(mutated));
  return true;
}

bool CheckQueue(const json& in) {
  if (!CheckRoundTrip<Queue>(in)) return false;
  Queue q = *FromJson<Queue>(in);
  FakeClusterLookup lookup;
  lookup.AddQueue("root").AddQueue("default", "root").AddQueue("eng", "root");
  lookup.queues["loop"] = q;  // the queue itself may form odd hierarchies with its parent
  MutateQueue(&q);
  (void)ValidateQueue(AdmissionOp::kCreate, nullptr, q, lookup);
  (void)ValidateQueue(AdmissionOp::kUpdate, &q, q, lookup);
  (void)ValidateQueue(AdmissionOp::kDelete, nullptr, q, lookup);
  return true;
}

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> k = {
      {"Job", CheckJob},
      {"PodGroup",
       [](const json& in) {
         if (!CheckRoundTrip<PodGroup>(in)) return false;
         FakeClusterLookup l;
         l.AddQueue("default");
         (void)ValidatePodGroup(*FromJson<PodGroup>(in), l);
         return true;
       }},
      {"Queue", CheckQueue},
      {"JobFlow",
       [](const json& in) {
         if (!CheckRoundTrip<JobFlow>(in)) return false;
         (void)ValidateJobFlow(*FromJson<JobFlow>(in));
         return true;
       }},
      {"JobTemplate", CheckRoundTrip<JobTemplate>},
      {"Command", CheckRoundTrip<Command>},
      {"HyperNode",
       [](const json& in) {
         if (!CheckRoundTrip<HyperNode>(in)) return false;
         (void)ValidateHyperNode(*FromJson<HyperNode>(in));
         return true;
       }},
      {"Pod",
       [](const json& in) {
         if (!CheckRoundTrip<Pod>(in)) return false;
         Pod p = *FromJson<Pod>(in);
         (void)ValidatePodJdb(p);
         (void)PodRequests(p.spec);
         DropUnknown(&p);
         return CheckRoundTrip<Pod>(ToJson(p));
       }},
      {"Node",
       [](const json& in) {
         if (!CheckRoundTrip<Node>(in)) return false;
         Node n = *FromJson<Node>(in);
         DropUnknown(&n);
         return CheckRoundTrip<Node>(ToJson(n));
       }},
      {"Service", CheckRoundTrip<Service>},
      {"ConfigMap", CheckRoundTrip<ConfigMap>},
      {"Secret", CheckRoundTrip<Secret>},
      {"NetworkPolicy", CheckRoundTrip<NetworkPolicy>},
      {"PersistentVolumeClaim", CheckRoundTrip<PersistentVolumeClaim>},
      {"Event", CheckRoundTrip<Event>},
      {"PriorityClass", CheckRoundTrip<PriorityClass>},
      {"Lease", CheckRoundTrip<Lease>},
      {"Namespace", CheckRoundTrip<Namespace>},
  };
  return k;
}

std::vector<std::string> LoadSeeds() {
  std::vector<std::string> seeds;
  for (const char* dir : {TEPHRA_FUZZ_CORPUS, TEPHRA_API_TESTDATA}) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());  // directory order is not deterministic
    for (const auto& f : files) {
      std::ifstream in(f);
      std::stringstream ss;
      ss << in.rdbuf();
      seeds.push_back(ss.str());
    }
  }
  return seeds;
}

const char* const kTokens[] = {"{",    "}",     "[",         "]",      "\"",      ",",     ":",       "null",
                               "true", "false", "-0",        "1e999",  "-1e-999", "0.5",   "\"1Gi\"", "\"12x\"",
                               "\\u0000", "\\ud800", "99999999999999999999999", "-9223372036854775809", "{}", "[]",
                               "\"\"", "\"*\"", "\"PodFailed\"", "2147483648", "4294967295", "1e3"};

std::string MutateText(std::string s, std::mt19937_64& rng) {
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  int rounds = 1 + static_cast<int>(rng() % 4);
  for (int r = 0; r < rounds; ++r) {
    switch (rng() % 6) {
      case 0:
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng() & 0xff);
        break;
      case 1:
        s.insert(pick(s.size() + 1), kTokens[pick(std::size(kTokens))]);
        break;
      case 2:
        if (!s.empty()) {
          size_t p = pick(s.size());
          s.erase(p, 1 + pick(std::min<size_t>(16, s.size() - p)));
        }
        break;
      case 3:
        if (!s.empty()) {  // duplicate a slice elsewhere
          size_t p = pick(s.size());
          size_t n = 1 + pick(std::min<size_t>(64, s.size() - p));
          s.insert(pick(s.size() + 1), s.substr(p, n));
        }
        break;
      case 4:
        s.resize(pick(s.size() + 1));  // truncate
        break;
      default:
        if (!s.empty()) s[pick(s.size())] = "{}[]\",:0-e."[pick(12)];
        break;
    }
  }
  return s;
}

json RandomValue(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth > 2 ? 7 : 9)) {
    case 0: return nullptr;
    case 1: return (rng() & 1) == 1;
    case 2: return static_cast<int64_t>(rng() % 2000) - 1000;
    case 3: return static_cast<int64_t>(rng());
    case 4: return static_cast<double>(rng() % 1000) / 7.0;
    case 5: {
      static const char* const kStrings[] = {"", "a", "100m", "2Gi", "1e3", "Running", "PodFailed", "*", "12x",
                                             "RestartJob", "root/a", "1/2", "-1", "50%", "hard", "volcano"};
      return kStrings[rng() % std::size(kStrings)];
    }
    case 6: return std::string(rng() % 5, static_cast<char>('a' + rng() % 26));
    case 7: {
      json a = json::array();
      for (int i = 0, n = static_cast<int>(rng() % 3); i < n; ++i) a.push_back(RandomValue(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = 0, n = static_cast<int>(rng() % 3); i < n; ++i)
        o["k" + std::to_string(rng() % 5)] = RandomValue(rng, depth + 1);
      return o;
    }
  }
}

// Picks a random node of the tree (reservoir sampling over a walk).
json* RandomNode(json* root, std::mt19937_64& rng) {
  json* chosen = root;
  uint64_t seen = 0;
  std::vector<json*> stack = {root};
  while (!stack.empty()) {
    json* n = stack.back();
    stack.pop_back();
    if (rng() % ++seen == 0) chosen = n;
    if (n->is_object() || n->is_array())
      for (auto& c : *n) stack.push_back(&c);
  }
  return chosen;
}

void MutateTree(json* doc, std::mt19937_64& rng) {
  int rounds = 1 + static_cast<int>(rng() % 3);
  for (int r = 0; r < rounds; ++r) {
    json* n = RandomNode(doc, rng);
    switch (rng() % 5) {
      case 0:
        *n = RandomValue(rng, 0);  // change type or value
        break;
      case 1:
        if (n->is_object() && !n->empty()) {
          auto it = n->begin();
          std::advance(it, static_cast<long>(rng() % n->size()));
          n->erase(it);
        }
        break;
      case 2:
        if (n->is_object()) (*n)["zzFuzz" + std::to_string(rng() % 3)] = RandomValue(rng, 0);
        break;
      case 3:
        if (n->is_array() && !n->empty()) n->push_back((*n)[rng() % n->size()]);
        break;
      default:
        if (n->is_string()) *n = n->get<std::string>() + "x";
        else if (n->is_number_integer()) *n = n->get<int64_t>() + 1;
        break;
    }
  }
}

TEST(ApiFuzzTest, MutatedDocumentsNeverCrashAndRoundTrip) {
  const std::vector<std::string> seeds = LoadSeeds();
  ASSERT_GE(seeds.size(), 20u);
  std::vector<json> trees;
  for (const auto& s : seeds)
    if (auto j = ParseJson(s); j.ok()) trees.push_back(*j);
  ASSERT_GE(trees.size(), 15u);

  std::mt19937_64 rng(0x7e9a2026);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  int iterations = 0, parsed = 0, decoded = 0;
  for (; iterations < 20000; ++iterations) {
    if ((iterations & 63) == 0 && std::chrono::steady_clock::now() > deadline) break;
    json doc;
    if (rng() % 2 == 0) {
      std::string text = MutateText(seeds[rng() % seeds.size()], rng);
      StatusOr<json> j = ParseJson(text);
      if (!j.ok()) continue;
      doc = std::move(*j);
    } else {
      doc = trees[rng() % trees.size()];
      MutateTree(&doc, rng);
      // The text form of a tree must parse back to the same tree.
      StatusOr<json> again = ParseJson(doc.dump());
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_EQ(*again, doc);
    }
    ++parsed;
    // Decode as the kind the document names (if any) plus two random kinds: cross-kind decoding finds
    // type confusions, and three decoders per document keep 20k iterations within the time budget.
    std::vector<const Kind*> kinds;
    if (doc.is_object() && doc.contains("kind") && doc["kind"].is_string())
      for (const Kind& k : Kinds())
        if (doc["kind"] == k.name) kinds.push_back(&k);
    kinds.push_back(&Kinds()[rng() % Kinds().size()]);
    kinds.push_back(&Kinds()[rng() % Kinds().size()]);
    for (const Kind* k : kinds) {
      SCOPED_TRACE(std::string(k->name) + " iteration " + std::to_string(iterations));
      if (k->check(doc)) ++decoded;
      if (::testing::Test::HasFailure()) return;  // first failure is enough (and reproducible)
    }
  }
  std::printf("fuzz: %d iterations, %d parsed, %d successful decodes\n", iterations, parsed, decoded);
  // The wall-clock budget is shared with whatever else the machine runs; demand real progress, not 20k.
  EXPECT_GE(iterations, 500) << "too slow to be useful";
  EXPECT_GT(decoded, parsed / 2);  // most mutated documents still decode as their own kind
}

TEST(ApiFuzzTest, CorpusEdgeCases) {
  // Depth beyond the limit is refused before a DOM is built; below it decodes (as a raw subtree).
  const std::vector<std::string> seeds = LoadSeeds();
  StatusOr<json> deep = ParseJson("{\"spec\":" + std::string(5000, '[') + std::string(5000, ']') + "}");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested deeper than 512"), std::string::npos);
  // An unknown field keeps its subtree as it is; a typed field (affinity is an object) refuses an array.
  StatusOr<json> ok_depth = ParseJson("{\"spec\":{\"someFutureField\":" + std::string(400, '[') + std::string(400, ']') + "}}");
  ASSERT_TRUE(ok_depth.ok());
  EXPECT_TRUE(FromJson<Pod>(*ok_depth).ok());
  StatusOr<json> typed_depth = ParseJson("{\"spec\":{\"affinity\":" + std::string(400, '[') + std::string(400, ']') + "}}");
  ASSERT_TRUE(typed_depth.ok());
  EXPECT_FALSE(FromJson<Pod>(*typed_depth).ok());
  EXPECT_FALSE(ParseJson("{\"a\":\"b\"").ok());
  // Huge numbers in integer fields are errors, not wrap-around or undefined behaviour.
  EXPECT_FALSE(FromJson<Job>(*ParseJson(R"({"spec":{"minAvailable":99999999999999999999999999}})")).ok());
  EXPECT_FALSE(FromJson<Job>(*ParseJson(R"({"spec":{"maxRetry":1e300}})")).ok());
  EXPECT_FALSE(FromJson<Job>(*ParseJson(R"({"spec":{"maxRetry":-1e300}})")).ok());
  EXPECT_FALSE(FromJson<Pod>(*ParseJson(R"({"spec":{"priority":2147483648}})")).ok());
  EXPECT_FALSE(ParseJson(R"({"spec":{"overhead":{"cpu":1e400}}})").ok());  // not representable: parse error
  EXPECT_FALSE(FromJson<Pod>(*ParseJson(R"({"spec":{"overhead":{"cpu":1e300}}})")).ok());  // out of Quantity range
  EXPECT_TRUE(FromJson<Job>(*ParseJson(R"({"spec":{"maxRetry":3.0}})")).ok());
}

// Property: ≥ 20 random objects per kind (type-preserving mutations of a seed of that kind) round-trip.
TEST(ApiFuzzTest, RandomObjectsPerKindRoundTrip) {
  std::map<std::string, json> seed_of;
  for (const auto& s : LoadSeeds()) {
    StatusOr<json> j = ParseJson(s);
    if (j.ok() && j->is_object() && j->contains("kind") && (*j)["kind"].is_string()) seed_of[(*j)["kind"]] = *j;
  }
  std::mt19937_64 rng(20261122);
  for (const Kind& k : Kinds()) {
    SCOPED_TRACE(k.name);
    auto it = seed_of.find(k.name);
    ASSERT_NE(it, seed_of.end()) << "no seed document of kind " << k.name;
    int ok = 0;
    for (int attempt = 0; attempt < 400 && ok < 20; ++attempt) {
      json doc = it->second;
      // Type-preserving changes: strings get a suffix, integers move, objects gain unknown keys.
      for (int r = 0; r < 4; ++r) {
        json* n = RandomNode(&doc, rng);
        if (n->is_string() && !core::Quantity::Parse(n->get<std::string>()).ok()) *n = n->get<std::string>() + "-z";
        else if (n->is_number_integer()) *n = static_cast<int64_t>(rng() % 100);
        else if (n->is_object()) (*n)["zzRandom"] = json::object({{"v", static_cast<int64_t>(rng() % 9)}});
      }
      if (k.check(doc)) ++ok;
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GE(ok, 20);
  }
}

}  // namespace
}  // namespace tephra::api
