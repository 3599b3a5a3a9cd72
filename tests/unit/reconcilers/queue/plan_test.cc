#include "queue/plan.h"

#include <gtest/gtest.h>

#include "tephra/api/batch.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::queue {
namespace {

api::Queue Q(const std::string& name, const std::string& state, const std::string& parent = "root") {
  api::Queue q;
  q.metadata.name = name;
  q.status.state = state;
  q.spec.parent = parent;
  return q;
}

Observed Obs(const std::string& state, int pgs, std::optional<std::string> cmd = std::nullopt) {
  Observed o;
  o.queue = Q("q", state);
  if (pgs > 0) o.pod_groups_by_phase["Running"] = pgs;
  o.command = std::move(cmd);
  return o;
}

struct Row {
  std::string state, action;
  int pgs;
  std::string want;
};

// The state table of docs/controllers.md, "Queue controller", every cell (with and without PodGroups where it
// matters).
TEST(QueueStateTable, EveryRow) {
  const std::string O = "Open", C = "Closed", G = "Closing", U = "Unknown";
  const std::string OQ = "OpenQueue", CQ = "CloseQueue", SQ = "SyncQueue";
  std::vector<Row> rows = {
      {O, OQ, 0, O}, {O, CQ, 0, C}, {O, CQ, 2, G}, {O, SQ, 0, O}, {O, SQ, 2, O},
      {"", OQ, 0, O}, {"", CQ, 1, G}, {"", SQ, 0, O},
      {C, OQ, 0, O}, {C, CQ, 0, C}, {C, CQ, 3, C}, {C, SQ, 0, C}, {C, SQ, 3, C},
      {G, OQ, 1, O}, {G, CQ, 0, C}, {G, CQ, 1, G}, {G, SQ, 0, C}, {G, SQ, 1, G},
      {U, OQ, 0, O}, {U, CQ, 0, C}, {U, CQ, 1, G}, {U, SQ, 0, U}, {U, SQ, 1, U},
  };
  for (const auto& r : rows) {
    EXPECT_EQ(NextState(r.state, r.action, r.pgs), r.want) << r.state << " + " << r.action << " pgs=" << r.pgs;
    std::optional<std::string> cmd;
    if (r.action != SQ) cmd = r.action;
    Actions a = Plan(Obs(r.state, r.pgs, cmd));
    if (r.want == r.state) {
      EXPECT_FALSE(a.set_state) << r.state << " + " << r.action;
    } else {
      ASSERT_TRUE(a.set_state) << r.state << " + " << r.action;
      EXPECT_EQ(*a.set_state, r.want);
    }
  }
}

TEST(QueuePlan, SteadyStateIsEmpty) {
  // Re-planning after the writes landed yields nothing (level-triggered, idempotent).
  EXPECT_TRUE(Plan(Obs("Open", 3)).Empty());
  EXPECT_TRUE(Plan(Obs("Closed", 0)).Empty());
  EXPECT_TRUE(Plan(Obs("Closing", 2)).Empty());
}

TEST(QueuePlan, ParentDefaultsToRoot) {
  Observed o = Obs("Open", 0);
  o.queue.spec.parent = "";
  EXPECT_TRUE(Plan(o).set_parent_root);
  o.queue.metadata.name = "root";
  EXPECT_FALSE(Plan(o).set_parent_root);
  o.queue.metadata.name = "q";
  o.queue.spec.parent = "team";
  EXPECT_FALSE(Plan(o).set_parent_root);
}

TEST(QueuePlan, ClosingParentClosesOpenChildAndMarksIt) {
  for (std::string ps : {"Closed", "Closing"}) {
    Observed o = Obs("Open", 0);
    o.parent = Q("team", ps);
    Actions a = Plan(o);
    ASSERT_TRUE(a.set_state);
    EXPECT_EQ(*a.set_state, "Closed");
    ASSERT_TRUE(a.closed_by_parent);
    EXPECT_TRUE(*a.closed_by_parent);
    // With PodGroups the child goes through Closing.
    o.pod_groups_by_phase["Pending"] = 1;
    EXPECT_EQ(*Plan(o).set_state, "Closing");
  }
}

TEST(QueuePlan, ReopeningParentReopensOnlyMarkedChildren) {
  Observed marked = Obs("Closed", 0);
  marked.queue.metadata.annotations[std::string(api::kClosedByParentAnnotation)] = "true";
  marked.parent = Q("team", "Open");
  Actions a = Plan(marked);
  ASSERT_TRUE(a.set_state);
  EXPECT_EQ(*a.set_state, "Open");
  ASSERT_TRUE(a.closed_by_parent);
  EXPECT_FALSE(*a.closed_by_parent);

  Observed unmarked = Obs("Closed", 0);
  unmarked.parent = Q("team", "Open");
  EXPECT_TRUE(Plan(unmarked).Empty());
}

TEST(QueuePlan, MarkedChildStaysClosedWhileParentClosed) {
  Observed o = Obs("Closed", 0);
  o.queue.metadata.annotations[std::string(api::kClosedByParentAnnotation)] = "true";
  o.parent = Q("team", "Closed");
  EXPECT_TRUE(Plan(o).Empty());
}

TEST(QueuePlan, OpenRefusedWhileParentClosed) {
  Observed o = Obs("Closed", 0, "OpenQueue");
  o.parent = Q("team", "Closing");
  Actions a = Plan(o);
  EXPECT_FALSE(a.set_state);
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].type, "Warning");
  EXPECT_EQ(a.events[0].reason, "OpenQueueRejected");
}

TEST(QueuePlan, ExplicitCommandClearsParentMark) {
  Observed o = Obs("Closed", 0, "CloseQueue");
  o.queue.metadata.annotations[std::string(api::kClosedByParentAnnotation)] = "true";
  o.parent = Q("team", "Closed");
  Actions a = Plan(o);
  ASSERT_TRUE(a.closed_by_parent);
  EXPECT_FALSE(*a.closed_by_parent);
  // Now the user owns the decision: a reopened parent leaves the queue closed.
  o.queue.metadata.annotations.clear();
  o.command.reset();
  o.parent = Q("team", "Open");
  EXPECT_TRUE(Plan(o).Empty());
}

// `root` cannot be closed: the Command is refused with a Warning Event and the state stays; a root whose state
// was written Closed by hand closes no child (before, it cascaded to every queue, `default` included).
TEST(QueuePlan, RootCannotBeClosedAndNeverCascades) {
  for (std::string cmd : {"CloseQueue"}) {
    Observed o;
    o.queue = Q("root", "Open", "");
    o.command = cmd;
    Actions a = Plan(o);
    EXPECT_FALSE(a.set_state);
    ASSERT_EQ(a.events.size(), 1u);
    EXPECT_EQ(a.events[0].type, "Warning");
    EXPECT_EQ(a.events[0].reason, "CloseQueueRejected");
    EXPECT_NE(a.events[0].message.find("root queue cannot be closed"), std::string::npos);
    EXPECT_EQ(a.action, "SyncQueue");
  }
  for (std::string ps : {"Closed", "Closing"}) {
    Observed child = Obs("Open", 0);
    child.queue.metadata.name = "default";
    child.parent = Q("root", ps, "");
    EXPECT_TRUE(Plan(child).Empty()) << ps;
  }
  // A child an older version closed through root is reopened (its mark says the parent did it).
  Observed marked = Obs("Closed", 0);
  marked.queue.metadata.annotations[std::string(api::kClosedByParentAnnotation)] = "true";
  marked.parent = Q("root", "Closed", "");
  Actions a = Plan(marked);
  ASSERT_TRUE(a.set_state);
  EXPECT_EQ(*a.set_state, "Open");
  // Opening root still works.
  Observed root;
  root.queue = Q("root", "Closed", "");
  root.command = "OpenQueue";
  ASSERT_TRUE(Plan(root).set_state);
  EXPECT_EQ(*Plan(root).set_state, "Open");
}

TEST(QueuePlan, StateChangeEventsButNotForNewQueue) {
  EXPECT_TRUE(Plan(Obs("", 0)).events.empty());
  Actions a = Plan(Obs("Open", 0, "CloseQueue"));
  ASSERT_EQ(a.events.size(), 1u);
  EXPECT_EQ(a.events[0].reason, "CloseQueue");
  EXPECT_EQ(a.events[0].message, "Close queue succeed");  // Volcano's text
}

// An open leaves volcano.sh/closed-by-parent: "false" on the queue, as Volcano's controller does; once it is
// there, nothing more is written.
TEST(QueuePlan, OpenWritesClosedByParentFalse) {
  Actions a = Plan(Obs("Closed", 0, "OpenQueue"));
  ASSERT_TRUE(a.closed_by_parent);
  EXPECT_FALSE(*a.closed_by_parent);
  Observed done = Obs("Open", 0);
  done.queue.metadata.annotations[std::string(api::kClosedByParentAnnotation)] = "false";
  EXPECT_TRUE(Plan(done).Empty());
  done.command = "OpenQueue";
  EXPECT_TRUE(Plan(done).Empty());
}

}  // namespace
}  // namespace tephra::reconcilers::queue
