// StatusWriter's pod condition path: PodScheduled=False with the gang's reason, coalesced per pod, and a pod
// that disappeared meanwhile is not an error.
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/scheduler/status_writer.h"

namespace tephra::scheduler {
namespace {

using api::json;
using kube::testing::FakeClient;

TEST(PodUnschedulablePatchTest, SetsPodScheduledFalseWithReasonAndMessage) {
  json p = PodUnschedulablePatch({"ns", "p0", "u0", "Unschedulable", "3/8 tasks in gang unschedulable: x"},
                                 "2026-11-22T12:00:00Z");
  ASSERT_EQ(p["status"]["conditions"].size(), 1u);
  const json& c = p["status"]["conditions"][0];
  EXPECT_EQ(c["type"], "PodScheduled");  // strategic merge keys conditions by type
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "Unschedulable");
  EXPECT_EQ(c["message"], "3/8 tasks in gang unschedulable: x");
  EXPECT_EQ(c["lastTransitionTime"], "2026-11-22T12:00:00Z");
}

TEST(StatusWriterTest, PodConditionCoalescedPerPodAndMissingPodIgnored) {
  auto fc = std::make_shared<FakeClient>();
  fc->Seed(api::Pod::Resource(), json{{"apiVersion", "v1"}, {"kind", "Pod"},
                                      {"metadata", {{"name", "p0"}, {"namespace", "ns"}, {"uid", "u0"}}},
                                      {"spec", {{"containers", json::array()}}}});
  // The first patch (of pod "gate") blocks until the test has queued two conditions for p0, so the writer
  // must find both in one batch: exactly one write for p0, with the newer message.
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool gate_entered = false, gate_open = false;
  fc->SetFailureInjector([&](const kube::testing::Action& a) -> std::optional<core::Status> {
    if (a.verb == "patch" && a.name == "gate") {
      std::unique_lock l(gate_mu);
      gate_entered = true;
      gate_cv.notify_all();
      gate_cv.wait(l, [&] { return gate_open; });
    }
    return std::nullopt;
  });
  core::FakeClock clock;
  {
    StatusWriter w(fc, nullptr, &clock);
    w.PodUnschedulable({"ns", "gate", "ug", "Unschedulable", "g"});
    {
      std::unique_lock l(gate_mu);
      gate_cv.wait(l, [&] { return gate_entered; });
    }
    w.PodUnschedulable({"ns", "p0", "u0", "Unschedulable", "old"});
    w.PodUnschedulable({"ns", "p0", "u0", "Unschedulable", "new"});
    {
      std::lock_guard l(gate_mu);
      gate_open = true;
    }
    gate_cv.notify_all();
    ASSERT_TRUE(w.WaitIdle(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
    EXPECT_EQ(w.stats().pod_condition_errors.load(), 0);  // NotFound for "gate" (never created) is not an error
    EXPECT_EQ(w.stats().pod_condition_writes.load(), 1);
  }
  auto got = fc->Get(api::Pod::Resource(), "ns", "p0");
  ASSERT_TRUE(got.ok()) << got.status();
  const json& conds = (*got)["status"]["conditions"];
  ASSERT_EQ(conds.size(), 1u) << got->dump();
  EXPECT_EQ(conds[0]["message"], "new");
  int patches = 0;
  for (const auto& a : fc->Actions())
    if (a.verb == "patch" && a.name == "p0") {
      ++patches;
      EXPECT_EQ(a.subresource, "status");
    }
  EXPECT_EQ(patches, 1);
}

}  // namespace
}  // namespace tephra::scheduler
