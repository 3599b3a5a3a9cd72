#include "tephra/nodesim/config.h"

#include <charconv>
#include <functional>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "tephra/api/devices.h"

namespace tephra::nodesim {
namespace {

using core::InvalidArgumentError;
using core::Quantity;
using core::Status;
using core::StatusOr;

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(text);
  while (std::getline(in, cur, ',')) {
    // Trim spaces so "a=b, c=d" works as typed in a shell.
    size_t b = cur.find_first_not_of(" \t");
    size_t e = cur.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    out.push_back(cur.substr(b, e - b + 1));
  }
  return out;
}

bool ValidEffect(const std::string& e) {
  return e == "NoSchedule" || e == "PreferNoSchedule" || e == "NoExecute";
}

constexpr const char* kTaintWant = "(want key=value:NoSchedule|PreferNoSchedule|NoExecute)";

Status Field(const std::string& path, Status s) {
  if (s.ok()) return s;
  return std::move(s).Annotate(path);
}

StatusOr<Quantity> ParseQuantity(const std::string& text) { return Quantity::Parse(text); }

Status CheckGroup(const NodeGroup& g, const std::string& path) {
  if (g.count < 0) return InvalidArgumentError(path + ".count: " + std::to_string(g.count) + " is negative");
  if (g.name_prefix.empty()) return InvalidArgumentError(path + ".namePrefix: must not be empty");
  if (g.nodes_per_leaf < 0) {
    return InvalidArgumentError(path + ".topology.nodesPerLeaf: " + std::to_string(g.nodes_per_leaf) + " is negative");
  }
  if (g.leaves_per_spine < 0) {
    return InvalidArgumentError(path + ".topology.leavesPerSpine: " + std::to_string(g.leaves_per_spine) +
                                " is negative");
  }
  if (g.leaves_per_spine > 0 && g.nodes_per_leaf == 0) {
    return InvalidArgumentError(path + ".topology.leavesPerSpine: needs nodesPerLeaf > 0");
  }
  for (const auto& [name, q] : g.capacity) {
    if (q.Sign() < 0) return InvalidArgumentError(path + ".capacity." + name + ": " + Quote(q.ToString()) + " is negative");
  }
  if (g.vgpu_split < 0 || g.vgpu_memory_mib < 0) return InvalidArgumentError(path + ".vgpu: split and memoryMiB must be >= 0");
  if (g.vgpu_split > 0) {
    auto gpus = g.capacity.find(kGpuResource);
    if (gpus == g.capacity.end() || gpus->second.Value() <= 0)
      return InvalidArgumentError(path + ".vgpu: needs nvidia.com/gpu cards to share (capacity or --gpus)");
    if (g.vgpu_memory_mib <= 0) return InvalidArgumentError(path + ".vgpu.memoryMiB: must be > 0");
  }
  return Status::OK();
}

// The vGPU device plugin's resources: every card's share slots, memory and compute.
void AddVgpuCapacity(NodeGroup& g) {
  auto gpus = g.capacity.find(kGpuResource);
  if (g.vgpu_split <= 0 || gpus == g.capacity.end()) return;
  const int64_t n = gpus->second.Value();
  g.capacity["volcano.sh/vgpu-number"] = Quantity::FromUnits(n * g.vgpu_split);
  g.capacity["volcano.sh/vgpu-memory"] = Quantity::FromUnits(n * g.vgpu_memory_mib);
  g.capacity["volcano.sh/vgpu-cores"] = Quantity::FromUnits(n * 100);
}

// GPU Feature Discovery's labels and the MIG strategies' resources, after the group's capacity is known.
// `field` names a setting as the user wrote it ("nodes[0].gpu.mig.profiles" or "--mig-profiles").
Status ApplyGpuFeatures(NodeGroup& g, const std::function<std::string(const char*)>& field) {
  const std::string& strategy = g.mig_strategy;
  if (!strategy.empty() && strategy != "none" && strategy != "single" && strategy != "mixed")
    return InvalidArgumentError(field("strategy") + ": " + Quote(strategy) + " is not none|single|mixed");
  const bool mig = strategy == "single" || strategy == "mixed";
  if (!mig && !g.mig_profiles.empty()) return InvalidArgumentError(field("profiles") + ": needs strategy single or mixed");
  auto gpus = g.capacity.find(kGpuResource);
  const int64_t n = gpus == g.capacity.end() ? 0 : gpus->second.Value();
  if (mig) {
    if (n <= 0) return InvalidArgumentError(field("strategy") + ": needs nvidia.com/gpu cards to cut (capacity or --gpus)");
    if (g.vgpu_split > 0) return InvalidArgumentError(field("strategy") + ": MIG and vGPU sharing exclude each other");
    if (g.mig_profiles.empty()) return InvalidArgumentError(field("profiles") + ": name at least one, e.g. 1g.10gb=7");
    if (strategy == "single" && g.mig_profiles.size() != 1)
      return InvalidArgumentError(field("profiles") + ": the single strategy cuts every GPU into one profile");
    int slices = 0;
    for (const auto& [name, count] : g.mig_profiles) {
      auto profile = api::ParseMigProfile(name);
      if (!profile) return InvalidArgumentError(field("profiles") + ": " + Quote(name) + " is not a MIG profile like 1g.10gb");
      if (count <= 0) return InvalidArgumentError(field("profiles") + "." + name + ": must be > 0");
      slices += profile->slices * count;
    }
    if (slices > 7)
      return InvalidArgumentError(field("profiles") + ": uses " + std::to_string(slices) +
                                  " compute slices per GPU, a GPU has 7");
  }
  if (!g.gpu_product.empty()) {
    g.labels[std::string(api::kGpuProductLabel)] = g.gpu_product;
    g.labels[std::string(api::kGpuCountLabel)] = std::to_string(n);
  }
  if (!mig) return Status::OK();
  g.labels[std::string(api::kMigCapableLabel)] = "true";
  g.labels[std::string(api::kMigStrategyLabel)] = strategy;
  if (strategy == "single") {
    const auto& [name, count] = *g.mig_profiles.begin();
    g.capacity[kGpuResource] = Quantity::FromUnits(n * count);
    if (!g.gpu_product.empty()) g.labels[std::string(api::kGpuProductLabel)] = g.gpu_product + "-MIG-" + name;
    return Status::OK();
  }
  g.capacity.erase(kGpuResource);
  for (const auto& [name, count] : g.mig_profiles)
    g.capacity[std::string(api::kMigResourcePrefix) + name] = Quantity::FromUnits(n * count);
  return Status::OK();
}

// "1g.10gb=7,2g.20gb=1" -> profile -> count.
StatusOr<std::map<std::string, int>> ParseMigProfileList(const std::string& text) {
  std::map<std::string, int> out;
  TEPHRA_ASSIGN_OR_RETURN(auto pairs, ParseLabelList(text));
  for (const auto& [name, count] : pairs) {
    int v = 0;
    auto [p, ec] = std::from_chars(count.data(), count.data() + count.size(), v);
    if (ec != std::errc() || p != count.data() + count.size()) return InvalidArgumentError(Quote(count) + " is not a count");
    out[name] = v;
  }
  return out;
}

// Reads a scalar as a string, or explains what it found instead.
StatusOr<std::string> Scalar(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) return InvalidArgumentError(path + ": expected a scalar");
  return n.Scalar();
}

StatusOr<int> Int(const YAML::Node& n, const std::string& path) {
  TEPHRA_ASSIGN_OR_RETURN(std::string s, Scalar(n, path));
  try {
    size_t used = 0;
    long v = std::stol(s, &used);
    if (used != s.size() || v > 1'000'000'000 || v < -1'000'000'000) throw std::invalid_argument("x");
    return static_cast<int>(v);
  } catch (const std::exception&) {
    return InvalidArgumentError(path + ": " + Quote(s) + " is not an integer");
  }
}

StatusOr<NodeGroup> GroupFromYaml(const YAML::Node& n, const std::string& path) {
  if (!n.IsMap()) return InvalidArgumentError(path + ": expected a mapping");
  NodeGroup g;
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string key = it->first.as<std::string>();
    const YAML::Node v = it->second;  // a copy: `it->` returns a proxy that dies with this statement
    std::string p = path + "." + key;
    if (key == "namePrefix") {
      TEPHRA_ASSIGN_OR_RETURN(g.name_prefix, Scalar(v, p));
    } else if (key == "count") {
      TEPHRA_ASSIGN_OR_RETURN(g.count, Int(v, p));
    } else if (key == "capacity") {
      if (!v.IsMap()) return InvalidArgumentError(p + ": expected a mapping of resource name to quantity");
      for (auto c = v.begin(); c != v.end(); ++c) {
        std::string res = c->first.as<std::string>();
        TEPHRA_ASSIGN_OR_RETURN(std::string text, Scalar(c->second, p + "." + res));
        auto q = ParseQuantity(text);
        if (!q.ok()) return Field(p + "." + res, q.status());
        g.capacity[res] = *q;
      }
    } else if (key == "labels") {
      if (!v.IsMap()) return InvalidArgumentError(p + ": expected a mapping");
      for (auto l = v.begin(); l != v.end(); ++l) {
        std::string lk = l->first.as<std::string>();
        TEPHRA_ASSIGN_OR_RETURN(g.labels[lk], Scalar(l->second, p + "." + lk));
      }
    } else if (key == "taints") {
      if (!v.IsSequence()) return InvalidArgumentError(p + ": expected a list");
      for (size_t i = 0; i < v.size(); ++i) {
        std::string tp = p + "[" + std::to_string(i) + "]";
        if (v[i].IsScalar()) {
          auto t = ParseTaint(v[i].Scalar());
          if (!t.ok()) return Field(tp, t.status());
          g.taints.push_back(*t);
        } else if (v[i].IsMap()) {
          Taint t;
          if (v[i]["key"]) {
            TEPHRA_ASSIGN_OR_RETURN(t.key, Scalar(v[i]["key"], tp + ".key"));
          }
          if (v[i]["value"]) {
            TEPHRA_ASSIGN_OR_RETURN(t.value, Scalar(v[i]["value"], tp + ".value"));
          }
          if (v[i]["effect"]) {
            TEPHRA_ASSIGN_OR_RETURN(t.effect, Scalar(v[i]["effect"], tp + ".effect"));
          }
          if (t.key.empty()) return InvalidArgumentError(tp + ".key: must not be empty");
          if (!ValidEffect(t.effect)) {
            return InvalidArgumentError(tp + ".effect: " + Quote(t.effect) + " is not NoSchedule|PreferNoSchedule|NoExecute");
          }
          g.taints.push_back(t);
        } else {
          return InvalidArgumentError(tp + ": expected \"key=value:Effect\" or {key, value, effect}");
        }
      }
    } else if (key == "topology") {
      if (!v.IsMap()) return InvalidArgumentError(p + ": expected a mapping");
      for (auto t = v.begin(); t != v.end(); ++t) {
        std::string tk = t->first.as<std::string>();
        if (tk == "nodesPerLeaf") {
          TEPHRA_ASSIGN_OR_RETURN(g.nodes_per_leaf, Int(t->second, p + "." + tk));
        } else if (tk == "leavesPerSpine") {
          TEPHRA_ASSIGN_OR_RETURN(g.leaves_per_spine, Int(t->second, p + "." + tk));
        } else {
          return InvalidArgumentError(p + "." + tk + ": unknown field (want nodesPerLeaf, leavesPerSpine)");
        }
      }
    } else if (key == "vgpu") {
      if (!v.IsMap()) return InvalidArgumentError(p + ": expected a mapping");
      for (auto t = v.begin(); t != v.end(); ++t) {
        std::string tk = t->first.as<std::string>();
        if (tk == "split") {
          TEPHRA_ASSIGN_OR_RETURN(g.vgpu_split, Int(t->second, p + "." + tk));
        } else if (tk == "memoryMiB") {
          TEPHRA_ASSIGN_OR_RETURN(int mem, Int(t->second, p + "." + tk));
          g.vgpu_memory_mib = mem;
        } else {
          return InvalidArgumentError(p + "." + tk + ": unknown field (want split, memoryMiB)");
        }
      }
    } else if (key == "gpu") {
      if (!v.IsMap()) return InvalidArgumentError(p + ": expected a mapping");
      for (auto t = v.begin(); t != v.end(); ++t) {
        std::string tk = t->first.as<std::string>();
        if (tk == "product") {
          TEPHRA_ASSIGN_OR_RETURN(g.gpu_product, Scalar(t->second, p + "." + tk));
        } else if (tk == "mig") {
          const YAML::Node m = t->second;  // a copy: the iterator's proxy (and its member) dies with the expression
          if (!m.IsMap()) return InvalidArgumentError(p + ".mig: expected a mapping");
          for (auto f = m.begin(); f != m.end(); ++f) {
            std::string fk = f->first.as<std::string>();
            const std::string fp = p + ".mig." + fk;
            if (fk == "strategy") {
              TEPHRA_ASSIGN_OR_RETURN(g.mig_strategy, Scalar(f->second, fp));
            } else if (fk == "profiles") {
              if (!f->second.IsMap()) return InvalidArgumentError(fp + ": expected a mapping of profile to count per GPU");
              for (auto q = f->second.begin(); q != f->second.end(); ++q) {
                std::string name = q->first.as<std::string>();
                TEPHRA_ASSIGN_OR_RETURN(g.mig_profiles[name], Int(q->second, fp + "." + name));
              }
            } else {
              return InvalidArgumentError(fp + ": unknown field (want strategy, profiles)");
            }
          }
        } else {
          return InvalidArgumentError(p + "." + tk + ": unknown field (want product, mig)");
        }
      }
    } else {
      return InvalidArgumentError(p + ": unknown field (want namePrefix, count, capacity, labels, taints, topology, vgpu, gpu)");
    }
  }
  AddVgpuCapacity(g);
  TEPHRA_RETURN_IF_ERROR(CheckGroup(g, path));
  TEPHRA_RETURN_IF_ERROR(ApplyGpuFeatures(g, [&](const char* f) { return path + ".gpu.mig." + f; }));
  return g;
}

}  // namespace

StatusOr<std::map<std::string, std::string>> ParseLabelList(const std::string& text) {
  std::map<std::string, std::string> out;
  for (const std::string& item : SplitComma(text)) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return InvalidArgumentError(Quote(item) + " is not key=value");
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

StatusOr<Taint> ParseTaint(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError(Quote(text) + " has no effect " + kTaintWant);
  Taint t;
  t.effect = text.substr(colon + 1);
  std::string kv = text.substr(0, colon);
  size_t eq = kv.find('=');
  t.key = kv.substr(0, eq);
  if (eq != std::string::npos) t.value = kv.substr(eq + 1);
  if (t.key.empty()) return InvalidArgumentError(Quote(text) + " has an empty key " + kTaintWant);
  if (!ValidEffect(t.effect)) {
    return InvalidArgumentError(Quote(text) + " has an unknown effect " + Quote(t.effect) + " " + kTaintWant);
  }
  return t;
}

StatusOr<std::vector<Taint>> ParseTaintList(const std::string& text) {
  std::vector<Taint> out;
  for (const std::string& item : SplitComma(text)) {
    TEPHRA_ASSIGN_OR_RETURN(Taint t, ParseTaint(item));
    out.push_back(std::move(t));
  }
  return out;
}

StatusOr<NodeGroup> GroupFromFlags(const FlagValues& f) {
  NodeGroup g;
  g.name_prefix = f.name_prefix;
  g.count = f.nodes;
  if (f.nodes < 0) return InvalidArgumentError("--nodes: " + std::to_string(f.nodes) + " is negative");
  if (f.name_prefix.empty()) return InvalidArgumentError("--name-prefix: must not be empty");
  const std::pair<const char*, const std::string*> quantities[] = {
      {"cpu", &f.cpu}, {"memory", &f.memory}, {"pods", &f.pods}, {"ephemeral-storage", &f.ephemeral_storage}};
  for (const auto& [res, text] : quantities) {
    auto q = ParseQuantity(*text);
    if (!q.ok()) return Field(std::string("--") + res, q.status());
    if (q->Sign() < 0) return InvalidArgumentError(std::string("--") + res + ": " + Quote(*text) + " is negative");
    g.capacity[res] = *q;
  }
  if (f.gpus < 0) return InvalidArgumentError("--gpus: " + std::to_string(f.gpus) + " is negative");
  if (f.npus < 0) return InvalidArgumentError("--npus: " + std::to_string(f.npus) + " is negative");
  // A node without a device does not advertise the resource at all, as a real kubelet without the
  // device plugin would not.
  if (f.gpus > 0) g.capacity[kGpuResource] = Quantity::FromUnits(f.gpus);
  if (f.npus > 0) g.capacity[kNpuResource] = Quantity::FromUnits(f.npus);
  auto labels = ParseLabelList(f.labels);
  if (!labels.ok()) return Field("--labels", labels.status());
  g.labels = *labels;
  auto taints = ParseTaintList(f.taints);
  if (!taints.ok()) return Field("--taints", taints.status());
  g.taints = *taints;
  g.nodes_per_leaf = f.nodes_per_leaf;
  g.leaves_per_spine = f.leaves_per_spine;
  if (f.nodes_per_leaf < 0) return InvalidArgumentError("--nodes-per-leaf: " + std::to_string(f.nodes_per_leaf) + " is negative");
  if (f.leaves_per_spine < 0) {
    return InvalidArgumentError("--leaves-per-spine: " + std::to_string(f.leaves_per_spine) + " is negative");
  }
  if (f.leaves_per_spine > 0 && f.nodes_per_leaf == 0) {
    return InvalidArgumentError("--leaves-per-spine: needs --nodes-per-leaf > 0");
  }
  if (f.vgpu_split < 0) return InvalidArgumentError("--vgpu-split: " + std::to_string(f.vgpu_split) + " is negative");
  if (f.vgpu_split > 0 && f.gpus <= 0) return InvalidArgumentError("--vgpu-split: needs --gpus > 0");
  if (f.vgpu_split > 0 && f.vgpu_memory_mib <= 0) return InvalidArgumentError("--vgpu-memory-mib: must be > 0");
  g.vgpu_split = f.vgpu_split;
  g.vgpu_memory_mib = f.vgpu_memory_mib;
  AddVgpuCapacity(g);
  g.gpu_product = f.gpu_product;
  g.mig_strategy = f.mig_strategy;
  auto profiles = ParseMigProfileList(f.mig_profiles);
  if (!profiles.ok()) return Field("--mig-profiles", profiles.status());
  g.mig_profiles = *profiles;
  TEPHRA_RETURN_IF_ERROR(ApplyGpuFeatures(g, [](const char* f) { return std::string("--mig-") + f; }));
  return g;
}

StatusOr<SimConfig> ParseConfigYaml(const std::string& text, const std::string& source) {
  // yaml-cpp reports errors by exception; they stop here (no exception crosses the module boundary).
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap() || !root["nodes"]) return InvalidArgumentError(source + ": expected a mapping with a `nodes` list");
    for (auto it = root.begin(); it != root.end(); ++it) {
      std::string key = it->first.as<std::string>();
      if (key != "nodes") return InvalidArgumentError(source + ": " + key + ": unknown field (want nodes)");
    }
    const YAML::Node& nodes = root["nodes"];
    if (!nodes.IsSequence()) return InvalidArgumentError(source + ": nodes: expected a list of node groups");
    SimConfig cfg;
    for (size_t i = 0; i < nodes.size(); ++i) {
      auto g = GroupFromYaml(nodes[i], "nodes[" + std::to_string(i) + "]");
      if (!g.ok()) return g.status();
      cfg.groups.push_back(std::move(*g));
    }
    return cfg;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(source + ": " + e.what());
  }
}

StatusOr<std::vector<NodeSpec>> ExpandNodes(const SimConfig& cfg) {
  std::vector<NodeSpec> out;
  std::map<std::string, size_t> owner;  // node name -> group index, to explain collisions
  for (size_t gi = 0; gi < cfg.groups.size(); ++gi) {
    const NodeGroup& g = cfg.groups[gi];
    for (int i = 0; i < g.count; ++i) {
      NodeSpec n;
      n.name = g.name_prefix + std::to_string(i);
      auto [it, inserted] = owner.emplace(n.name, gi);
      if (!inserted) {
        return InvalidArgumentError("nodes[" + std::to_string(gi) + "].namePrefix: " + Quote(g.name_prefix) +
                                    " yields node " + Quote(n.name) + ", also produced by nodes[" +
                                    std::to_string(it->second) + "]");
      }
      n.index = static_cast<int>(out.size());
      n.group = &g;
      n.labels = g.labels;
      if (g.nodes_per_leaf > 0) {
        int leaf = i / g.nodes_per_leaf;
        n.labels[kLeafLabel] = g.name_prefix + "leaf-" + std::to_string(leaf);
        if (g.leaves_per_spine > 0) n.labels[kSpineLabel] = g.name_prefix + "spine-" + std::to_string(leaf / g.leaves_per_spine);
      }
      n.labels["kubernetes.io/hostname"] = n.name;
      n.labels["kubernetes.io/os"] = "linux";
      n.labels["kubernetes.io/arch"] = "amd64";
      n.labels["beta.kubernetes.io/os"] = "linux";
      n.labels["beta.kubernetes.io/arch"] = "amd64";
      n.labels[kSimLabel] = "true";
      out.push_back(std::move(n));
    }
  }
  return out;
}

}  // namespace tephra::nodesim
