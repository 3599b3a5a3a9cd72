// Job-trace replay: the ITP columns and their errors, gangs built from GPU counts, and traces small enough to
// work out by hand what the scheduler must do without reservations and with EASY backfill, and how the
// start estimates are scored.
#include "tephra/simulate/jobs.h"

#include <gtest/gtest.h>

#include "tephra/sched/framework.h"

namespace tephra::simulate {
namespace {

TEST(JobTrace, ParsesTheItpColumnsByName) {
  auto jobs = ParseJobTrace("num_gpu,job_id,duration,submission_time,extra\r\n8,a,600,5,x\r\n\r\n16,b,700,3,y\r\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].id, "a");
  EXPECT_EQ((*jobs)[0].submit, 5);
  EXPECT_EQ((*jobs)[0].duration, 600);
  EXPECT_EQ((*jobs)[0].gpus, 8);
  EXPECT_EQ((*jobs)[1].gpus, 16);
  // The window sorts by submission, ties in the file's order.
  auto w = TraceWindow(*jobs, 0, 0);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].id, "b");
  EXPECT_EQ(TraceWindow(*jobs, 1, 5).size(), 1u);
  EXPECT_TRUE(TraceWindow(*jobs, 2, 1).empty());
}

TEST(JobTrace, ErrorsNameTheLineAndColumn) {
  const std::string header = "job_id,submission_time,duration,num_gpu\n";
  auto bad = ParseJobTrace(header + "a,0,600,1\nb,0,ten,1\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 3, column duration: \"ten\""), std::string::npos) << bad.status();
  auto gang = ParseJobTrace(header + "a,0,600,12\n");
  ASSERT_FALSE(gang.ok());
  EXPECT_NE(gang.status().message().find("line 2, column num_gpu: want 1..8 or a multiple of 8, got 12"),
            std::string::npos)
      << gang.status();
  auto zero = ParseJobTrace(header + "a,0,0,1\n");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("line 2, column duration"), std::string::npos) << zero.status();
  auto id = ParseJobTrace(header + ",0,600,1\n");
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("line 2, column job_id"), std::string::npos) << id.status();
  auto header_only = ParseJobTrace("job_id,submission_time,num_gpu\n");
  ASSERT_FALSE(header_only.ok());
  EXPECT_NE(header_only.status().message().find("header has no column duration"), std::string::npos)
      << header_only.status();
}

TEST(JobTrace, ModesAndEstimateKindsParse) {
  EXPECT_EQ(*ParseBackfillMode("conservative"), BackfillMode::kConservative);
  EXPECT_EQ(*ParseEstimateMode("user"), EstimateMode::kUser);
  EXPECT_FALSE(ParseBackfillMode("fifo").ok());
  EXPECT_FALSE(ParseEstimateMode("").ok());
}

TEST(JobTrace, UserEstimatesAreAtLeastTheDurationInQuarterHours) {
  EXPECT_EQ(UserEstimate(600, 0.0), 900);        // factor 1, rounded up to 15 minutes
  EXPECT_EQ(UserEstimate(3600, 0.0), 3600);      // already a multiple
  EXPECT_EQ(UserEstimate(3600, 0.5), 7200);      // factor 2 (the log-uniform midpoint)
  EXPECT_EQ(UserEstimate(3600, 0.999999), 14400);  // just under 4x, rounded up
  for (double d : {0.1, 0.3, 0.7, 0.9}) {
    const int64_t e = UserEstimate(1234, d);
    EXPECT_GE(e, 1234);
    EXPECT_LE(e, 4 * 1234 + 900);
    EXPECT_EQ(e % 900, 0);
  }
}

TEST(JobTrace, TheSlaModeNeedsTheSlaPlugin) {
  JobReplayOptions o;
  o.mode = BackfillMode::kSla;
  auto conf = JobReplayConf(o);
  if (sched::PluginRegistry::Builtin().Has("sla")) {
    ASSERT_TRUE(conf.ok()) << conf.status();
    EXPECT_EQ(conf->core.reservation_depth, 0);
  } else {
    ASSERT_FALSE(conf.ok());
    EXPECT_EQ(conf.status().code(), core::StatusCode::kNotFound);
  }
  o.mode = BackfillMode::kConservative;
  o.conservative_depth = 16;
  EXPECT_EQ(JobReplayConf(o)->core.reservation_depth, 16);
  o.mode = BackfillMode::kEasy;
  EXPECT_EQ(JobReplayConf(o)->core.reservation_depth, 1);
}

JobReplayResult Replay(const std::vector<TraceJob>& jobs, int nodes, BackfillMode mode,
                       EstimateMode est = EstimateMode::kExact) {
  JobReplayOptions o;
  o.nodes = nodes;
  o.mode = mode;
  o.estimates = est;
  o.large_gang_gpus = 16;
  auto conf = JobReplayConf(o);
  EXPECT_TRUE(conf.ok()) << conf.status();
  auto r = ReplayJobs(jobs, *conf, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : JobReplayResult{};
}

const JobOutcome& Of(const JobReplayResult& r, const std::string& id) {
  for (const auto& o : r.outcomes)
    if (o.id == id) return o;
  static const JobOutcome kMissing;
  ADD_FAILURE() << "no job " << id;
  return kMissing;
}

TEST(JobReplay, GangsTakeWholeNodesAndJobsAboveTheClusterAreCounted) {
  // Two nodes of 8 GPUs: a 16-GPU gang needs both (two pods of 8), two 4-GPU jobs then share one node, and
  // a 24-GPU job can never run.
  std::vector<TraceJob> jobs = {{"gang", 0, 100, 16}, {"four-a", 10, 100, 4}, {"four-b", 10, 100, 4},
                                {"huge", 20, 100, 24}};
  JobReplayResult r = Replay(jobs, 2, BackfillMode::kNone);
  EXPECT_EQ(r.total_gpus, 16);
  EXPECT_EQ(r.jobs, 4);
  EXPECT_EQ(r.jobs_run, 3);
  EXPECT_EQ(r.jobs_too_big, 1);
  EXPECT_EQ(Of(r, "gang").start, 0);
  EXPECT_EQ(Of(r, "gang").end, 100);
  EXPECT_EQ(Of(r, "four-a").start, 100);
  EXPECT_EQ(Of(r, "four-b").start, 100);
  EXPECT_EQ(Of(r, "huge").start, -1);
  // 16 x 100 + 2 x 4 x 100 GPU-seconds over 16 GPUs x 200 s.
  EXPECT_DOUBLE_EQ(r.gpu_utilisation, 100.0 * (1600 + 800) / (16 * 200));
  EXPECT_EQ(r.large.jobs, 1);
  EXPECT_DOUBLE_EQ(r.large.p99_s, 0);
  EXPECT_DOUBLE_EQ(r.all.mean_s, (0 + 90 + 90) / 3.0);
  EXPECT_DOUBLE_EQ(r.mean_jct_s, (100 + 190 + 190) / 3.0);
}

// Two nodes. A holds n0 until 1000. The gang B (both nodes) arrives at 10; C (one node, 2000 s) at 20; D
// (one node, 900 s) at 30.
//   none: C takes n1 at once, D takes n0 when A ends, and B waits for both: it starts at 2020 when C ends.
//   easy: B is reserved at 1000 on both nodes. C would still hold n1 then: it waits. D ends at 930, before
//         the reservation starts: it backfills n1 at once. B starts at 1000, C after it at 1500.
std::vector<TraceJob> BlockedGang() {
  return {{"A", 0, 1000, 8}, {"B", 10, 500, 16}, {"C", 20, 2000, 8}, {"D", 30, 900, 8}};
}

TEST(JobReplay, WithoutReservationsSmallJobsOvertakeTheGang) {
  JobReplayResult r = Replay(BlockedGang(), 2, BackfillMode::kNone);
  EXPECT_EQ(Of(r, "A").start, 0);
  EXPECT_EQ(Of(r, "B").start, 2020);
  EXPECT_EQ(Of(r, "C").start, 20);
  EXPECT_EQ(Of(r, "D").start, 1000);
  EXPECT_EQ(r.large.jobs, 1);
  EXPECT_DOUBLE_EQ(r.large.p99_s, 2010);
  EXPECT_EQ(r.est_scored, 0);  // no estimates without reservations
  EXPECT_EQ(Of(r, "B").estimate_kind, "");
}

TEST(JobReplay, EasyReservesForTheGangAndBackfillsWhatEndsBeforeIt) {
  JobReplayResult r = Replay(BlockedGang(), 2, BackfillMode::kEasy);
  EXPECT_EQ(Of(r, "A").start, 0);
  EXPECT_EQ(Of(r, "B").start, 1000);
  EXPECT_EQ(Of(r, "C").start, 1500);
  EXPECT_EQ(Of(r, "D").start, 30);
  EXPECT_DOUBLE_EQ(r.large.p99_s, 990);
  // B's first estimate is its reservation, made on arrival, and exact.
  const JobOutcome& b = Of(r, "B");
  EXPECT_EQ(b.estimate_kind, sched::StartEstimateKindName(sched::StartEstimate::Kind::kReserved));
  EXPECT_EQ(b.estimated_at, 10);
  EXPECT_EQ(b.estimated_start, 1000);
  // C's first estimate is its planned start behind B (B's end, 1500), made on arrival: exact. Its reservation
  // comes when B starts at 1000, for the same 1500.
  const JobOutcome& c = Of(r, "C");
  EXPECT_EQ(c.estimate_kind, sched::StartEstimateKindName(sched::StartEstimate::Kind::kPlanned));
  EXPECT_EQ(c.estimated_start, 1500);
  EXPECT_EQ(c.reserved_at, 1000);
  EXPECT_EQ(c.reserved_start, 1500);
  EXPECT_EQ(r.est_scored, 2);
  EXPECT_DOUBLE_EQ(r.est_within_10pct, 100);
  EXPECT_DOUBLE_EQ(r.est_within_60s, 100);
  EXPECT_EQ(r.est_ever_reserved, 2);
  EXPECT_EQ(r.est_reserved_scored, 2);
  EXPECT_DOUBLE_EQ(r.est_reserved_within_10pct, 100);
}

TEST(JobReplay, UserEstimatesOverstateAndTheReservationComesTooLate) {
  // A's user estimate is at least its duration, in quarter hours, so B's reservation is for A's estimated
  // end, later than A's real end: B starts when A ends, before its estimate.
  std::vector<TraceJob> jobs = {{"A", 0, 1000, 8}, {"B", 10, 500, 16}};
  JobReplayResult r = Replay(jobs, 2, BackfillMode::kEasy, EstimateMode::kUser);
  const JobOutcome& a = Of(r, "A");
  const JobOutcome& b = Of(r, "B");
  EXPECT_GE(a.estimate, 1800);  // 1000 s rounds up to at least 30 minutes
  EXPECT_EQ(b.start, 1000);
  EXPECT_EQ(b.estimated_start, a.estimate);
  EXPECT_EQ(r.est_scored, 1);
  EXPECT_DOUBLE_EQ(r.est_within_10pct, 0);
}

TEST(JobReplay, APeriodicCycleRunsWhileJobsWait) {
  // Nothing else happens between 0 and 1000, yet the waiting gang is looked at every 60 s.
  std::vector<TraceJob> jobs = {{"A", 0, 1000, 8}, {"B", 0, 100, 16}};
  JobReplayResult r = Replay(jobs, 2, BackfillMode::kNone);
  EXPECT_EQ(Of(r, "B").start, 1000);
  EXPECT_GE(r.cycles, 1000 / 60);
}

}  // namespace
}  // namespace tephra::simulate

namespace tephra::simulate {
namespace {

// Two nodes. A holds n0 until 10,000. The gang B (both nodes) arrives at 10; C (one node, a long job) at
// 4,000, when B has waited past the sla's hour. Without reservations C takes n1 at once and B waits for A and
// C.
std::vector<TraceJob> DueGang() { return {{"A", 0, 10000, 8}, {"B", 10, 500, 16}, {"C", 4000, 100000, 8}}; }

TEST(JobReplay, WithoutReservationsTheFreeNodeGoesToTheJobBehindTheGang) {
  JobReplayResult none = Replay(DueGang(), 2, BackfillMode::kNone);
  EXPECT_EQ(Of(none, "C").start, 4000);
  EXPECT_EQ(Of(none, "B").start, 104000);
  JobReplayResult easy = Replay(DueGang(), 2, BackfillMode::kEasy);
  EXPECT_EQ(Of(easy, "B").start, 10000);
  EXPECT_EQ(Of(easy, "C").start, 10500);
}

// DISABLED: what core/sched/src/plugins/sla.cc's header promises ("once a job's wait has run out ... allocate
// pipelines it, holding what it could place for the rest of the cycle instead of giving it to the jobs
// behind") does not happen for a gang whose missing pods have nowhere to be pipelined: the gang plugin (tier
// 1, before sla) votes Reject on JobPipelined while fewer than minMember pods are ready or pipelined, which is
// also Volcano's gang rule, and a Reject wins the tier vote. B's one placeable pod is discarded and C takes n1
// at 4,000 exactly as with no sla at all (B starts at 104,000, C at 4,000). Kept as the reproduction of that
// difference between the plugin's comment and the configuration Volcano ships (gang + sla); enable it if the
// core decides the sla hold should outrank gang's veto.
TEST(JobReplay, DISABLED_TheSlaHoldsTheFreeNodeForAGangPastItsWaitingTime) {
  if (!sched::PluginRegistry::Builtin().Has("sla")) GTEST_SKIP() << "the core has no sla plugin";
  JobReplayResult sla = Replay(DueGang(), 2, BackfillMode::kSla);
  EXPECT_EQ(Of(sla, "B").start, 10000);
  EXPECT_EQ(Of(sla, "C").start, 10500);
}

}  // namespace
}  // namespace tephra::simulate
