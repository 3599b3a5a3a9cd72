// The controller with real worker threads and an informer over the FakeClient's watch.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "tephra/api/core_v1.h"
#include "tephra/kube/controller.h"
#include "tephra/kube/informer.h"
#include "testing/fake_client.h"

namespace tephra::kube {
namespace {

using std::chrono::seconds;

template <typename F>
bool PollUntil(F f, std::chrono::seconds limit = seconds(10)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return f();
}

TEST(ControllerThreadsTest, WorkersNeverShareAKeyAndDrainOnStop) {
  metrics::Registry reg;
  std::mutex mu;
  std::set<std::string> in_flight;
  std::atomic<int> violations{0}, done{0};
  ReconcilerFunc r([&](const std::string& k) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (!in_flight.insert(k).second) violations++;
    }
    std::this_thread::yield();
    {
      std::lock_guard<std::mutex> l(mu);
      in_flight.erase(k);
    }
    done++;
    return ReconcileResult::Success();
  });
  ControllerOptions o;
  o.name = "t";
  o.workers = 8;
  o.registry = &reg;
  Controller c(std::move(o), &r);
  ASSERT_TRUE(c.Start().ok());
  for (int i = 0; i < 5000; ++i) c.Enqueue("ns/k" + std::to_string(i % 50));
  ASSERT_TRUE(PollUntil([&] { return c.queue().Len() == 0 && c.queue().NumProcessing() == 0; }));
  c.Stop();
  EXPECT_EQ(violations.load(), 0);
  EXPECT_GE(done.load(), 50);
  EXPECT_EQ(reg.FindCounter("reconcile_total")->With({"t", "success"})->Value(), done.load());
}

TEST(ControllerThreadsTest, InformerEventsOfOwnedPodsEnqueueTheOwnerJob) {
  auto api = std::make_shared<testing::FakeClient>();
  metrics::Registry reg;
  std::mutex mu;
  std::multiset<std::string> seen;
  ReconcilerFunc r([&](const std::string& k) {
    std::lock_guard<std::mutex> l(mu);
    seen.insert(k);
    return ReconcileResult::Success();
  });
  ControllerOptions o;
  o.name = "jobs";
  o.registry = &reg;
  Controller c(std::move(o), &r);
  Informer<api::Pod> pods(api);
  EnqueueOwner(c, pods, "Job", "batch.volcano.sh");
  ASSERT_TRUE(c.Start().ok());
  pods.Start();
  ASSERT_TRUE(pods.WaitForSync(std::chrono::steady_clock::now() + seconds(10)));
  ASSERT_TRUE(PollUntil([&] { return api->ActiveWatches() > 0; }));
  api::json pod = {{"metadata",
                    {{"name", "train-worker-0"},
                     {"namespace", "team-a"},
                     {"ownerReferences",
                      {{{"apiVersion", "batch.volcano.sh/v1alpha1"}, {"kind", "Job"}, {"name", "train"},
                        {"uid", "u1"}, {"controller", true}}}}}},
                   {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  ASSERT_TRUE(api->Create(api::Pod::Resource(), "team-a", pod).ok());
  api::json orphan = {{"metadata", {{"name", "lonely"}, {"namespace", "team-a"}}},
                      {"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}};
  ASSERT_TRUE(api->Create(api::Pod::Resource(), "team-a", orphan).ok());
  ASSERT_TRUE(PollUntil([&] {
    std::lock_guard<std::mutex> l(mu);
    return seen.count("team-a/train") >= 1;
  }));
  ASSERT_TRUE(api->Delete(api::Pod::Resource(), "team-a", "train-worker-0").ok());
  ASSERT_TRUE(PollUntil([&] {
    std::lock_guard<std::mutex> l(mu);
    return seen.count("team-a/train") >= 2;
  }));
  pods.Stop();
  api->CloseWatches();
  c.Stop();
  std::lock_guard<std::mutex> l(mu);
  for (const auto& k : seen) EXPECT_EQ(k, "team-a/train");  // the orphan pod enqueued nothing
}

}  // namespace
}  // namespace tephra::kube
