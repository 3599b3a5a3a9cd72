// kubeconfig parsing, in-cluster config, resolution order, token rotation.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "tephra/kube/config.h"

namespace tephra::kube {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kc-config-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    unsetenv("KUBECONFIG");
    unsetenv("KUBERNETES_SERVICE_HOST");
    unsetenv("KUBERNETES_SERVICE_PORT");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

const char* kBasic = R"(apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: other
  context: {cluster: c2, user: u2}
- name: dev
  context: {cluster: c1, user: u1}
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority: ca.crt
users:
- name: u1
  user:
    token: abc123
)";

TEST_F(ConfigTest, ParsesCurrentContextAndResolvesRelativeFiles) {
  Write("ca.crt", "PEM");
  auto path = Write("config", kBasic);
  auto cfg = LoadConfig(path);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->token, "abc123");
  EXPECT_EQ(cfg->ca_file, (dir_ / "ca.crt").string());
}

TEST_F(ConfigTest, DecodesInlineCertificateData) {
  // "hello" / "world" in base64.
  auto cfg = ParseKubeconfig(R"(current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://h:1", certificate-authority-data: aGVsbG8=}}]
users: [{name: u, user: {client-certificate-data: d29ybGQ=, client-key-data: aGVsbG8=}}]
)", "/tmp/x");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->ca_data, "hello");
  EXPECT_EQ(cfg->client_cert_data, "world");
  EXPECT_EQ(cfg->client_key_data, "hello");
}

TEST_F(ConfigTest, ErrorsNameFileAndKey) {
  auto no_ctx = ParseKubeconfig("clusters: []\n", "/etc/kc");
  EXPECT_NE(no_ctx.status().message().find("/etc/kc: current-context"), std::string::npos) << no_ctx.status();
  auto no_server = ParseKubeconfig(R"(current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {insecure-skip-tls-verify: true}}]
users: [{name: u, user: {}}]
)", "/etc/kc");
  EXPECT_NE(no_server.status().message().find("clusters[c].cluster.server"), std::string::npos) << no_server.status();
  auto bad_b64 = ParseKubeconfig(R"(current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://h", certificate-authority-data: "!!"}}]
users: [{name: u, user: {}}]
)", "/etc/kc");
  EXPECT_NE(bad_b64.status().message().find("certificate-authority-data"), std::string::npos) << bad_b64.status();
  auto half_cert = ParseKubeconfig(R"(current-context: x
contexts: [{name: x, context: {cluster: c, user: u}}]
clusters: [{name: c, cluster: {server: "https://h"}}]
users: [{name: u, user: {client-certificate-data: aGVsbG8=}}]
)", "/etc/kc");
  EXPECT_NE(half_cert.status().message().find("users[u].user.client-key"), std::string::npos) << half_cert.status();
  auto yaml_err = ParseKubeconfig("a: [unclosed\n", "/etc/kc");
  EXPECT_EQ(yaml_err.status().code(), core::StatusCode::kInvalidArgument);
  EXPECT_NE(yaml_err.status().message().find("/etc/kc"), std::string::npos);
  auto missing = LoadConfig((dir_ / "nope").string());
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
}

TEST_F(ConfigTest, ResolutionOrderFlagThenEnvThenInCluster) {
  Write("ca.crt", "PEM");
  auto flag = Write("flag", kBasic);
  std::string env_text = kBasic;
  env_text.replace(env_text.find("abc123"), 6, "envtok");
  auto env = Write("env", env_text);
  setenv("KUBECONFIG", (std::string("/does/not/exist:") + env).c_str(), 1);
  auto from_env = LoadConfig("");
  ASSERT_TRUE(from_env.ok()) << from_env.status();
  EXPECT_EQ(from_env->token, "envtok");
  auto from_flag = LoadConfig(flag, "http://override:8080/");
  ASSERT_TRUE(from_flag.ok()) << from_flag.status();
  EXPECT_EQ(from_flag->token, "abc123");
  EXPECT_EQ(from_flag->server, "http://override:8080");
  unsetenv("KUBECONFIG");
  EXPECT_EQ(LoadConfig("").status().code(), core::StatusCode::kFailedPrecondition);
}

TEST_F(ConfigTest, InClusterUsesServiceAccountFiles) {
  Write("token", "sa-token\n");
  Write("ca.crt", "PEM");
  EXPECT_FALSE(InClusterConfig(dir_.string()).ok());  // no env
  setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
  setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto cfg = InClusterConfig(dir_.string());
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->token_file, (dir_ / "token").string());
  EXPECT_EQ(cfg->ca_file, (dir_ / "ca.crt").string());
  EXPECT_EQ(*TokenSource(*cfg).Token(), "sa-token");
}

TEST_F(ConfigTest, TokenFileIsReReadWhenItChanges) {
  RestConfig cfg;
  cfg.token_file = Write("token", "one\n");
  TokenSource ts(cfg, std::chrono::seconds(0));  // check on every call
  EXPECT_EQ(*ts.Token(), "one");
  // Rotate the way the kubelet does: write a new file and rename it over the old one (new inode/mtime).
  auto tmp = Write("token.new", "two\n");
  fs::last_write_time(tmp, fs::last_write_time(cfg.token_file) + std::chrono::seconds(5));
  fs::rename(tmp, cfg.token_file);
  EXPECT_EQ(*ts.Token(), "two");
  // While the file is briefly missing the last token keeps being served.
  fs::remove(cfg.token_file);
  EXPECT_EQ(*ts.Token(), "two");

  RestConfig cfg2;
  cfg2.token_file = Write("t2", "a");
  TokenSource cached(cfg2, std::chrono::seconds(3600));
  EXPECT_EQ(*cached.Token(), "a");
  std::ofstream(dir_ / "t2") << "b";
  EXPECT_EQ(*cached.Token(), "a");  // not re-checked within the interval
}

}  // namespace
}  // namespace tephra::kube
