#include "tephra/webhooks/configurations.h"

#include <algorithm>

#include "tephra/api/core_v1.h"

namespace tephra::webhooks {
namespace {

using api::json;

// "/jobs/mutate" -> "jobs-mutate".
std::string PathSuffix(std::string_view path) {
  std::string s(path.substr(1));
  std::replace(s.begin(), s.end(), '/', '-');
  return s;
}

// A CEL string list literal: ["volcano", "x"].
std::string CelList(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ", ";
    out += "'";
    for (char c : v[i]) {
      if (c == '\'' || c == '\\') out += '\\';
      out += c;
    }
    out += "'";
  }
  return out + "]";
}

}  // namespace

std::string ConfigurationName(const ConfigurationOptions& o, const Endpoint& ep) {
  return o.service_name + "-" + PathSuffix(ep.path);
}

std::vector<json> BuildConfigurations(const ConfigurationOptions& o, const std::set<std::string>& enabled) {
  std::vector<json> out;
  std::vector<std::string> excluded = o.excluded_namespaces;
  if (!o.service_namespace.empty() &&
      std::find(excluded.begin(), excluded.end(), o.service_namespace) == excluded.end())
    excluded.push_back(o.service_namespace);
  for (const Endpoint& ep : Endpoints()) {
    if (!enabled.count(std::string(ep.path))) continue;
    const bool pods = ep.resource == "pods";
    json client;
    if (!o.webhook_url.empty()) {
      std::string base = o.webhook_url;
      while (!base.empty() && base.back() == '/') base.pop_back();
      client["url"] = base + std::string(ep.path);
    } else {
      client["service"] = {{"name", o.service_name},
                           {"namespace", o.service_namespace},
                           {"path", std::string(ep.path)},
                           {"port", o.service_port}};
    }
    if (!o.ca_bundle_pem.empty()) client["caBundle"] = api::Base64Encode(o.ca_bundle_pem);
    json ops = json::array();
    for (auto op : ep.operations) ops.push_back(std::string(op));
    json hook = {
        {"name", std::string(ep.webhook_name)},
        {"admissionReviewVersions", {"v1", "v1beta1"}},
        {"clientConfig", client},
        {"rules", json::array({{{"apiGroups", {std::string(ep.api_group)}},
                                {"apiVersions", {std::string(ep.api_version)}},
                                {"operations", ops},
                                {"resources", {std::string(ep.resource)}}}})},
        {"failurePolicy", ep.mutating || pods ? "Ignore" : o.failure_policy},
        {"matchPolicy", "Equivalent"},
        {"sideEffects", "None"},
        {"timeoutSeconds", o.timeout_seconds},
        // kubernetes.io/metadata.name is set on every namespace by API servers 1.21+ (docs/webhook.md says
        // what that means on 1.20).
        {"namespaceSelector",
         {{"matchExpressions", json::array({{{"key", "kubernetes.io/metadata.name"},
                                             {"operator", "NotIn"},
                                             {"values", excluded}}})}}},
    };
    if (pods && o.match_conditions && !o.scheduler_names.empty()) {
      hook["matchConditions"] = json::array(
          {{{"name", "tephra-scheduler-pods"},
            {"expression", "has(object.spec.schedulerName) && object.spec.schedulerName in " +
                               CelList(o.scheduler_names)}}});
      // The only pod rule is about the disruption-budget annotations: a pod without them is not sent at all.
      if (!ep.mutating)
        hook["matchConditions"].push_back(
            {{"name", "tephra-jdb-annotations"},
             {"expression", "has(object.metadata.annotations) && ('volcano.sh/jdb-min-available' in "
                            "object.metadata.annotations || 'volcano.sh/jdb-max-unavailable' in "
                            "object.metadata.annotations)"}});
    }
    if (ep.mutating) hook["reinvocationPolicy"] = "Never";
    json cfg = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                {"kind", ep.mutating ? "MutatingWebhookConfiguration" : "ValidatingWebhookConfiguration"},
                {"metadata",
                 {{"name", ConfigurationName(o, ep)},
                  {"labels", {{"app.kubernetes.io/managed-by", "tephra-webhook"}}}}},
                {"webhooks", json::array({hook})}};
    out.push_back(std::move(cfg));
  }
  return out;
}

}  // namespace tephra::webhooks
