// Two leader-election contenders on a real coordination.k8s.io/v1 Lease (label e2e). One contender is a child
// process (this binary with --contender) so that killing it is a real crash: no release, no last renew; the
// other runs in the test process where its transitions are observable.
//
// Timings are client-go's defaults (15 s lease, 10 s renew deadline, 2 s retry, jitter 1.2):
//  * SIGKILL: the standby may take over only after it has seen the record unchanged for a full lease
//    duration, i.e. not before the holder's last renewTime + 15 s, and must do so within 15 s plus about two
//    jittered polls (≤ 4.4 s each) of the kill: ≤ 25 s.
//  * SIGTERM: the child's Stop() releases (empty holder, 1 s duration), so the standby acquires at its next
//    poll, long before the lease would have expired.
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <thread>

#include "tephra/core/clock.h"
#include "tephra/kube/config.h"
#include "tephra/kube/leader_election.h"
#include "tephra/kube/transport.h"

extern char** environ;

namespace tephra::kube {
namespace {

using SteadyClock = std::chrono::steady_clock;
const ResourceInfo kLeases{"coordination.k8s.io", "v1", "Lease", "leases", true};
constexpr const char* kLockNamespace = "default";

core::StatusOr<ClientPtr> MakeClient() {
  auto cfg = LoadConfig();
  if (!cfg.ok()) return cfg.status();
  return NewClient(*cfg);
}

LeaderElectionConfig Config(const std::string& lock, const std::string& identity) {
  LeaderElectionConfig c;  // lease/renew/retry/jitter: the defaults under test
  c.lock_namespace = kLockNamespace;
  c.lock_name = lock;
  c.identity = identity;
  return c;
}

// Child mode: contend until SIGTERM, then Stop() (which releases the lease when leading) and exit 0.
int RunContender(const std::string& lock, const std::string& identity) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  // Blocked before any thread exists, so every thread inherits the mask and sigwait below gets the signal.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  auto client = MakeClient();
  if (!client.ok()) {
    std::cerr << "contender: " << client.status() << "\n";
    return 2;
  }
  auto cfg = Config(lock, identity);
  cfg.on_started_leading = [&] { std::cerr << "contender " << identity << ": leading\n"; };
  auto el = LeaderElector::Create(*client, cfg);
  if (!el.ok()) {
    std::cerr << "contender: " << el.status() << "\n";
    return 2;
  }
  std::thread runner([&] { (*el)->Run(); });
  int sig = 0;
  sigwait(&set, &sig);
  (*el)->Stop();
  runner.join();
  std::cerr << "contender " << identity << ": stopped\n";
  return 0;
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// Spawns `<self> --contender lock identity` with output to $TEPHRA_E2E_LOG_DIR/leader-<identity>.log.
pid_t SpawnContender(const std::string& lock, const std::string& identity) {
  std::string exe = SelfExe();
  const char* log_dir = std::getenv("TEPHRA_E2E_LOG_DIR");
  std::string log = std::string(log_dir ? log_dir : "/tmp") + "/leader-" + identity + ".log";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::string a1 = "--contender";
  char* argv[] = {exe.data(), a1.data(), const_cast<char*>(lock.c_str()), const_cast<char*>(identity.c_str()),
                  nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

template <typename F>
bool PollUntil(F f, std::chrono::milliseconds within, std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  auto deadline = SteadyClock::now() + within;
  while (SteadyClock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(every);
  }
  return f();
}

class LeaderE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = MakeClient();
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *c;
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (auto& ch : test) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    lock_ = "le-" + test.substr(0, 40) + "-" + std::to_string(::getpid());
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    if (standby_) standby_->Stop();
    if (runner_.joinable()) runner_.join();
  }
  json Lease() {
    auto l = client_->Get(kLeases, kLockNamespace, lock_);
    return l.ok() ? *l : json();
  }
  std::string Holder() {
    json l = Lease();
    if (!l.is_object() || !l.contains("spec")) return "";
    return l["spec"].value("holderIdentity", "");
  }
  // Starts the child contender and waits until it holds the lease; then the in-process standby, until it has
  // seen the child as leader (so its own expiry clock runs from a record it observed).
  void StartLeaderAndStandby() {
    child_ = SpawnContender(lock_, leader_id_);
    ASSERT_GT(child_, 0);
    ASSERT_TRUE(PollUntil([&] { return Holder() == leader_id_; }, std::chrono::seconds(20)))
        << "child contender never acquired; holder=" << Holder();
    auto cfg = Config(lock_, standby_id_);
    cfg.on_started_leading = [this] {
      acquired_steady_ = SteadyClock::now();
      acquired_wall_ = core::RealClock::Get().WallNow();
      acquired_ = true;
    };
    auto el = LeaderElector::Create(client_, cfg);
    ASSERT_TRUE(el.ok()) << el.status();
    standby_ = std::move(*el);
    runner_ = std::thread([this] { standby_->Run(); });
    ASSERT_TRUE(PollUntil([&] { return standby_->GetLeader() == leader_id_; }, std::chrono::seconds(10)));
    ASSERT_FALSE(standby_->IsLeader());
  }

  ClientPtr client_;
  std::string lock_;
  const std::string leader_id_ = "contender-a-" + std::to_string(::getpid());
  const std::string standby_id_ = "contender-b-" + std::to_string(::getpid());
  pid_t child_ = -1;
  std::unique_ptr<LeaderElector> standby_;
  std::thread runner_;
  std::atomic<bool> acquired_{false};
  SteadyClock::time_point acquired_steady_{};
  core::Clock::WallTime acquired_wall_{};
};

TEST_F(LeaderE2eTest, KilledLeaderIsReplacedAfterLeaseExpiry) {
  ASSERT_NO_FATAL_FAILURE(StartLeaderAndStandby());
  const int transitions_before = Lease()["spec"].value("leaseTransitions", 0);
  ASSERT_EQ(::kill(child_, SIGKILL), 0);
  const auto killed = SteadyClock::now();
  ASSERT_EQ(::waitpid(child_, nullptr, 0), child_);
  child_ = -1;
  // The dead leader's last renewTime: nobody writes the Lease until the standby takes it.
  const std::string last_renew = Lease()["spec"].value("renewTime", "");
  ASSERT_FALSE(last_renew.empty());
  core::Clock::WallTime renew{};
  ASSERT_TRUE(core::ParseRfc3339(last_renew, &renew)) << last_renew;

  ASSERT_TRUE(PollUntil([&] { return acquired_.load(); }, std::chrono::seconds(30)))
      << "standby did not take over within 30 s of SIGKILL";
  const double after_kill = std::chrono::duration<double>(acquired_steady_ - killed).count();
  const double after_renew = std::chrono::duration<double>(acquired_wall_ - renew).count();
  std::cout << "takeover " << after_kill << " s after SIGKILL, " << after_renew
            << " s after the dead leader's last renewTime\n";
  EXPECT_LE(after_kill, 25.0) << "15 s lease + two jittered 2 s polls";
  // Never before the lease expired (the renewTime is microsecond-precise; allow 10 ms for truncation).
  EXPECT_GE(after_renew, 15.0 - 0.01);
  json l = Lease();
  EXPECT_EQ(l["spec"].value("holderIdentity", ""), standby_id_);
  EXPECT_EQ(l["spec"].value("leaseTransitions", 0), transitions_before + 1);
  EXPECT_EQ(l["spec"].value("leaseDurationSeconds", 0), 15);
}

TEST_F(LeaderE2eTest, CleanShutdownReleasesSoStandbyTakesOverAtNextPoll) {
  ASSERT_NO_FATAL_FAILURE(StartLeaderAndStandby());
  ASSERT_EQ(::kill(child_, SIGTERM), 0);
  const auto terminated = SteadyClock::now();
  int status = 0;
  ASSERT_EQ(::waitpid(child_, &status, 0), child_);
  child_ = -1;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "contender exit status " << status;
  ASSERT_TRUE(PollUntil([&] { return acquired_.load(); }, std::chrono::seconds(15)))
      << "standby did not take over within 15 s of a clean shutdown";
  const double after_term = std::chrono::duration<double>(acquired_steady_ - terminated).count();
  std::cout << "takeover " << after_term << " s after SIGTERM\n";
  // One jittered poll is at most 2 s·(1 + 1.2) = 4.4 s; a lease expiry would take ≥ 15 s.
  EXPECT_LE(after_term, 4.4 + 1.0);
  EXPECT_EQ(Holder(), standby_id_);
}

}  // namespace
}  // namespace tephra::kube

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--contender") == 0) return tephra::kube::RunContender(argv[2], argv[3]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
