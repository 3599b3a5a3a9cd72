// kubeconfig / in-cluster resolution. The only yaml-cpp user of the client runtime.
#include "tephra/kube/config.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace tephra::kube {

namespace {

namespace fs = std::filesystem;
using core::InvalidArgumentError;
using core::StatusOr;

StatusOr<std::string> ReadFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::NotFoundError(what + ": cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TrimSpace(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// Base64 for the *-data fields (standard alphabet, padding optional, whitespace ignored).
StatusOr<std::string> Base64Decode(const std::string& in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    int v = val(c);
    if (v < 0) return InvalidArgumentError("invalid base64");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string Resolve(const std::string& file, const fs::path& base_dir) {
  if (file.empty()) return file;
  fs::path p(file);
  if (p.is_absolute()) return file;
  return (base_dir / p).string();
}

// Finds the entry named `name` in a kubeconfig list (clusters/users/contexts) and returns its inner map.
StatusOr<YAML::Node> FindNamed(const YAML::Node& root, const std::string& list, const std::string& inner,
                               const std::string& name, const std::string& where) {
  YAML::Node seq = root[list];
  if (!seq || !seq.IsSequence()) return InvalidArgumentError(where + ": " + list + ": missing or not a list");
  for (size_t i = 0; i < seq.size(); ++i) {
    YAML::Node e = seq[i];
    if (e["name"] && e["name"].as<std::string>() == name) {
      YAML::Node v = e[inner];
      if (!v || !v.IsMap())
        return InvalidArgumentError(where + ": " + list + "[" + std::to_string(i) + "]." + inner + ": missing");
      return v;
    }
  }
  return core::NotFoundError(where + ": " + list + ": no entry named \"" + name + "\"");
}

std::string Str(const YAML::Node& n, const char* key) {
  YAML::Node v = n[key];
  if (!v || v.IsNull()) return "";
  return v.as<std::string>();
}

}  // namespace

StatusOr<RestConfig> ParseKubeconfig(const std::string& yaml_text, const std::string& path) {
  const std::string where = "kubeconfig " + path;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root.IsMap()) return InvalidArgumentError(where + ": not a YAML mapping");
    fs::path base = fs::path(path).parent_path();
    std::string ctx_name = Str(root, "current-context");
    if (ctx_name.empty()) return InvalidArgumentError(where + ": current-context: not set");
    TEPHRA_ASSIGN_OR_RETURN(YAML::Node ctx, FindNamed(root, "contexts", "context", ctx_name, where));
    std::string cluster_name = Str(ctx, "cluster");
    std::string user_name = Str(ctx, "user");
    if (cluster_name.empty())
      return InvalidArgumentError(where + ": contexts[" + ctx_name + "].context.cluster: not set");
    TEPHRA_ASSIGN_OR_RETURN(YAML::Node cluster, FindNamed(root, "clusters", "cluster", cluster_name, where));

    RestConfig cfg;
    cfg.server = Str(cluster, "server");
    if (cfg.server.empty())
      return InvalidArgumentError(where + ": clusters[" + cluster_name + "].cluster.server: not set");
    while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
    cfg.ca_file = Resolve(Str(cluster, "certificate-authority"), base);
    if (auto d = Str(cluster, "certificate-authority-data"); !d.empty()) {
      auto dec = Base64Decode(d);
      if (!dec.ok())
        return InvalidArgumentError(where + ": clusters[" + cluster_name +
                                    "].cluster.certificate-authority-data: invalid base64");
      cfg.ca_data = *dec;
    }
    if (cluster["insecure-skip-tls-verify"]) cfg.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"].as<bool>();

    if (!user_name.empty()) {
      TEPHRA_ASSIGN_OR_RETURN(YAML::Node user, FindNamed(root, "users", "user", user_name, where));
      const std::string uw = where + ": users[" + user_name + "].user.";
      cfg.token = Str(user, "token");
      cfg.token_file = Resolve(Str(user, "tokenFile"), base);
      if (cfg.token_file.empty()) cfg.token_file = Resolve(Str(user, "token-file"), base);
      cfg.client_cert_file = Resolve(Str(user, "client-certificate"), base);
      cfg.client_key_file = Resolve(Str(user, "client-key"), base);
      if (auto d = Str(user, "client-certificate-data"); !d.empty()) {
        auto dec = Base64Decode(d);
        if (!dec.ok()) return InvalidArgumentError(uw + "client-certificate-data: invalid base64");
        cfg.client_cert_data = *dec;
      }
      if (auto d = Str(user, "client-key-data"); !d.empty()) {
        auto dec = Base64Decode(d);
        if (!dec.ok()) return InvalidArgumentError(uw + "client-key-data: invalid base64");
        cfg.client_key_data = *dec;
      }
      if (user["exec"] || user["auth-provider"])
        return core::UnimplementedError(uw + "exec/auth-provider: not supported; use a token or client certificate");
      bool has_cert = !cfg.client_cert_file.empty() || !cfg.client_cert_data.empty();
      bool has_key = !cfg.client_key_file.empty() || !cfg.client_key_data.empty();
      if (has_cert != has_key)
        return InvalidArgumentError(uw + (has_cert ? "client-key" : "client-certificate") +
                                    ": missing (certificate and key go together)");
      if (!cfg.token_file.empty()) {
        struct stat st {};
        if (::stat(cfg.token_file.c_str(), &st) != 0)
          return core::NotFoundError(uw + "tokenFile: cannot read " + cfg.token_file);
      }
    }
    for (const std::string* f : {&cfg.ca_file, &cfg.client_cert_file, &cfg.client_key_file}) {
      if (f->empty()) continue;
      struct stat st {};
      if (::stat(f->c_str(), &st) != 0) return core::NotFoundError(where + ": referenced file " + *f + " not found");
    }
    return cfg;
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(where + ": " + e.what());
  }
}

StatusOr<RestConfig> InClusterConfig(const std::string& sa_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host || !port || !*port)
    return core::FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT not set (not running in a pod?)");
  RestConfig cfg;
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6 literal
  cfg.server = "https://" + h + ":" + port;
  cfg.token_file = sa_dir + "/token";
  auto tok = ReadFile(cfg.token_file, "in-cluster config");
  if (!tok.ok()) return tok.status();
  cfg.ca_file = sa_dir + "/ca.crt";
  struct stat st {};
  if (::stat(cfg.ca_file.c_str(), &st) != 0)
    return core::NotFoundError("in-cluster config: cannot read " + cfg.ca_file);
  return cfg;
}

StatusOr<RestConfig> LoadConfig(const std::string& kubeconfig_path, const std::string& master_override) {
  auto finish = [&](StatusOr<RestConfig> r) -> StatusOr<RestConfig> {
    if (r.ok() && !master_override.empty()) {
      r->server = master_override;
      while (!r->server.empty() && r->server.back() == '/') r->server.pop_back();
    }
    return r;
  };
  auto from_file = [&](const std::string& p) -> StatusOr<RestConfig> {
    auto text = ReadFile(p, "kubeconfig");
    if (!text.ok()) return text.status();
    return ParseKubeconfig(*text, p);
  };
  if (!kubeconfig_path.empty()) return finish(from_file(kubeconfig_path));
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      std::string p = list.substr(start, end - start);
      struct stat st {};
      if (!p.empty() && ::stat(p.c_str(), &st) == 0) return finish(from_file(p));
      start = end + 1;
    }
  }
  auto ic = InClusterConfig();
  if (ic.ok()) return finish(std::move(ic));
  if (!master_override.empty()) {
    RestConfig cfg;  // --master alone: plain, unauthenticated (e.g. an insecure local port)
    return finish(cfg);
  }
  return core::FailedPreconditionError(
      "no Kubernetes configuration: pass --kubeconfig, set $KUBECONFIG, or run in a pod (" +
      ic.status().message() + ")");
}

TokenSource::TokenSource(const RestConfig& cfg, std::chrono::seconds recheck)
    : token_(cfg.token), file_(cfg.token_file), recheck_(recheck) {}

StatusOr<std::string> TokenSource::Token() {
  core::MutexLock lock(mu_);
  if (file_.empty()) return token_;
  auto now = std::chrono::steady_clock::now();
  if (mtime_ns_ >= 0 && now < next_check_) return token_;
  next_check_ = now + recheck_;
  struct stat st {};
  if (::stat(file_.c_str(), &st) != 0) {
    if (mtime_ns_ >= 0) return token_;  // keep serving the last token while the file is being replaced
    return core::UnauthenticatedError("token file " + file_ + ": cannot stat");
  }
  int64_t m = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (m == mtime_ns_) return token_;
  auto text = ReadFile(file_, "token file");
  if (!text.ok()) {
    if (mtime_ns_ >= 0) return token_;
    return core::UnauthenticatedError(text.status().message());
  }
  token_ = TrimSpace(*text);
  mtime_ns_ = m;
  return token_;
}

}  // namespace tephra::kube
