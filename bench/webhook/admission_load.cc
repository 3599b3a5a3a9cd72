// Open-loop admission load generator: a separate process that POSTs AdmissionReviews to a running `tephra
// webhook` over TLS with keep-alive, at a fixed request rate, and reports latency percentiles.
//
//   admission_load --url https://127.0.0.1:8443 --ca ca.crt --path /jobs/validate --body job100
//                  --rate 1000 --seconds 20 --connections 16
//
// Open loop: request i of a connection is due at t0 + i * connections / rate; its latency is measured from when
// it was due, not from when it was sent, so a slow server shows up as latency (no coordinated omission).
// Bodies: bench/webhook/bodies.h (job100: a defaulted vcjob of 100 tasks; job100bare; job1; pod; podother).
// Output: one JSON line {"path","body","rate","achieved_rate","requests","errors","p50_ms","p99_ms","p999_ms",
// "max_ms"}. Exit 1 when a request failed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "bodies.h"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double Pct(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  std::string url = "https://127.0.0.1:8443", ca, path = "/jobs/validate", body = "job100";
  double rate = 1000, seconds = 10;
  int connections = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--url") url = v;
    else if (k == "--ca") ca = v;
    else if (k == "--path") path = v;
    else if (k == "--body") body = v;
    else if (k == "--rate") rate = std::atof(v.c_str());
    else if (k == "--seconds") seconds = std::atof(v.c_str());
    else if (k == "--connections") connections = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (rate <= 0 || seconds <= 0 || connections <= 0) {
    std::fprintf(stderr, "--rate, --seconds and --connections must be positive\n");
    return 2;
  }
  const std::string payload = tephra::bench::ReviewBody(body);
  if (payload.empty()) {
    std::fprintf(stderr, "unknown --body %s (job100, job100bare, job1, pod, podother)\n", body.c_str());
    return 2;
  }
  std::atomic<int64_t> errors{0};
  std::vector<std::vector<double>> lat(static_cast<size_t>(connections));
  const auto interval = std::chrono::duration<double>(static_cast<double>(connections) / rate);
  const auto t0 = Clock::now() + std::chrono::milliseconds(200);
  const auto end = t0 + std::chrono::duration<double>(seconds);
  std::vector<std::thread> ts;
  for (int c = 0; c < connections; ++c) {
    ts.emplace_back([&, c] {
      httplib::Client cli(url);
      if (!ca.empty()) cli.set_ca_cert_path(ca.c_str());
      cli.enable_server_certificate_verification(!ca.empty());
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);
      cli.set_read_timeout(10, 0);
      // Connections start staggered so their requests interleave evenly.
      auto due = t0 + std::chrono::duration_cast<Clock::duration>(interval * (static_cast<double>(c) / connections));
      while (due < end) {
        std::this_thread::sleep_until(due);
        auto res = cli.Post(path, payload, "application/json");
        const auto done = Clock::now();
        if (!res || res->status != 200) {
          if (errors.fetch_add(1) < 3)
            std::fprintf(stderr, "request failed: %s\n",
                         res ? (std::to_string(res->status) + " " + res->body.substr(0, 200)).c_str()
                             : httplib::to_string(res.error()).c_str());
        } else {
          lat[static_cast<size_t>(c)].push_back(std::chrono::duration<double, std::milli>(done - due).count());
        }
        due += std::chrono::duration_cast<Clock::duration>(interval);
      }
    });
  }
  for (auto& t : ts) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  json out = {{"path", path},
              {"body", body},
              {"body_bytes", payload.size()},
              {"rate", rate},
              {"connections", connections},
              {"requests", all.size() + static_cast<size_t>(errors.load())},
              {"errors", errors.load()},
              {"achieved_rate", static_cast<double>(all.size()) / elapsed},
              {"p50_ms", Pct(all, 0.50)},
              {"p99_ms", Pct(all, 0.99)},
              {"p999_ms", Pct(all, 0.999)},
              {"max_ms", all.empty() ? 0 : all.back()}};
  std::printf("%s\n", out.dump().c_str());
  return errors.load() ? 1 : 0;
}
