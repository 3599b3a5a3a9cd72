// Helpers shared by the command groups: JSON access, listing, manifests, Commands.
#include <fstream>
#include <sstream>

#include "internal.h"
#include "tephra/api/bus.h"
#include "tephra/kube/yaml.h"

namespace tephra::ctl::internal {

const json& At(const json& j, const char* pointer) {
  static const json kNull;
  const json* p = &j;
  std::string_view rest(pointer);
  while (!rest.empty()) {
    rest.remove_prefix(1);  // '/'
    size_t end = rest.find('/');
    std::string key(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    if (!p->is_object()) return kNull;
    auto it = p->find(key);
    if (it == p->end()) return kNull;
    p = &*it;
  }
  return *p;
}

std::string Str(const json& j, const char* pointer) {
  const json& v = At(j, pointer);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::string MapValue(const json& map, std::string_view key) {
  if (!map.is_object()) return "";
  auto it = map.find(std::string(key));
  return it != map.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t Int(const json& j, const char* pointer) {
  const json& v = At(j, pointer);
  return v.is_number_integer() ? v.get<int64_t>() : 0;
}

core::StatusOr<std::vector<json>> ListObjects(Context& ctx, const api::ResourceInfo& r, const std::string& ns,
                                              const std::string& label_selector) {
  kube::ListOptions opts;
  opts.label_selector = label_selector;
  opts.limit = 500;
  auto list = kube::ListAll(ctx.client, r, ns, opts);
  if (!list.ok()) return ctx.Explain(list.status(), "list", r, ns);
  return std::move(list->items);
}

core::StatusOr<std::vector<json>> ReadManifests(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::NotFoundError(path + ": cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return kube::YamlDocumentsToJson(ss.str(), path);
}

json ControllerRef(const json& obj, const api::ResourceInfo& r) {
  return json{{"apiVersion", r.ApiVersion()},
              {"kind", std::string(r.kind)},
              {"name", Str(obj, "/metadata/name")},
              {"uid", Str(obj, "/metadata/uid")},
              {"controller", true},
              {"blockOwnerDeletion", true}};
}

json NewCommand(const json& target, const api::ResourceInfo& r, std::string_view action, const std::string& ns) {
  std::string lower(action);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  json ref = ControllerRef(target, r);
  const auto& cr = api::Command::Resource();
  json cmd = {{"apiVersion", cr.ApiVersion()},
              {"kind", std::string(cr.kind)},
              {"metadata",
               {{"generateName", Str(target, "/metadata/name") + "-" + lower + "-"},
                {"namespace", ns},
                {"ownerReferences", json::array({ref})}}},
              {"target", ref},
              {"action", std::string(action)}};
  return cmd;
}

}  // namespace tephra::ctl::internal
