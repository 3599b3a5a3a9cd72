#include <gtest/gtest.h>

#include "testing/fake_client.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/scheduling.h"
#include "tephra/scheduler/process.h"

namespace tephra::scheduler {
namespace {

using kube::testing::FakeClient;

TEST(DefaultQueuesTest, CreatesRootAndDefaultOnceAndToleratesExisting) {
  FakeClient fc;
  ASSERT_TRUE(EnsureDefaultQueues(fc, "default").ok());
  ASSERT_TRUE(EnsureDefaultQueues(fc, "default").ok()) << "AlreadyExists is fine";
  auto root = fc.Get(api::Queue::Resource(), "", "root");
  auto def = fc.Get(api::Queue::Resource(), "", "default");
  ASSERT_TRUE(root.ok());
  ASSERT_TRUE(def.ok());
  EXPECT_EQ((*root)["spec"]["reclaimable"], false);
  EXPECT_EQ((*def)["spec"]["reclaimable"], true);
  EXPECT_EQ((*def)["spec"]["parent"], "root");
  EXPECT_EQ((*def)["spec"]["weight"], 1);
}

}  // namespace
}  // namespace tephra::scheduler
