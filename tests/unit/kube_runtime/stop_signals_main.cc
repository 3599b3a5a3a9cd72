// kube::InstallStopSignals in real child processes (fork before any thread exists, so the child may start
// threads safely): a role whose graceful shutdown hangs still exits within its deadline, a second signal
// exits at once, and a role that finishes in time keeps its own exit code. Separate binary from the other
// runtime tests because it forks and uses real time.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <gtest/gtest.h>

#include "tephra/kube/signals.h"

namespace tephra::kube {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int ready_fd = -1;
};

// Forks a child that installs the stop signals with `grace`, reports readiness, waits for the signal and
// then runs `after_signal` (which decides whether shutdown hangs). The child never returns into gtest.
template <typename F>
Child Spawn(std::chrono::milliseconds grace, F after_signal) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    InstallStopSignals({grace, "test"});
    char c = 'r';
    if (write(fds[1], &c, 1) != 1) std::_Exit(90);
    while (!WaitForStop(1000ms)) {
    }
    c = 's';  // the graceful path has begun
    if (write(fds[1], &c, 1) != 1) std::_Exit(91);
    after_signal();
    std::_Exit(0);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

void WaitFor(const Child& c, char what) {
  char x = 0;
  ASSERT_EQ(read(c.ready_fd, &x, 1), 1);
  ASSERT_EQ(x, what);
}
void WaitReady(const Child& c) { WaitFor(c, 'r'); }

// Exit status after waiting at most `limit`; -1 if still running (then it is killed).
int WaitExit(pid_t pid, std::chrono::milliseconds limit, std::chrono::milliseconds* took) {
  auto start = SteadyClock::now();
  for (;;) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      *took = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start);
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (SteadyClock::now() - start > limit) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      return -1;
    }
    std::this_thread::sleep_for(10ms);
  }
}

TEST(StopSignals, HungShutdownIsCutAtTheDeadline) {
  Child c = Spawn(300ms, [] {
    for (;;) std::this_thread::sleep_for(1h);  // e.g. a lease release waiting on a dead API server
  });
  WaitReady(c);
  ASSERT_EQ(kill(c.pid, SIGTERM), 0);
  std::chrono::milliseconds took{};
  EXPECT_EQ(WaitExit(c.pid, 20s, &took), 1) << "forced exit reports failure";
  EXPECT_GE(took.count(), 250) << "the graceful path got its time";
}

TEST(StopSignals, SecondSignalExitsAtOnce) {
  Child c = Spawn(3600s, [] {
    for (;;) std::this_thread::sleep_for(1h);
  });
  WaitReady(c);
  ASSERT_EQ(kill(c.pid, SIGINT), 0);
  WaitFor(c, 's');  // the first was taken (two pending signals of one kind would merge into one)
  ASSERT_EQ(kill(c.pid, SIGINT), 0);
  std::chrono::milliseconds took{};
  EXPECT_EQ(WaitExit(c.pid, 20s, &took), 1);
}

TEST(StopSignals, CleanShutdownKeepsItsExitCode) {
  Child c = Spawn(3600s, [] { std::_Exit(0); });
  WaitReady(c);
  ASSERT_EQ(kill(c.pid, SIGTERM), 0);
  std::chrono::milliseconds took{};
  EXPECT_EQ(WaitExit(c.pid, 20s, &took), 0);
}

}  // namespace
}  // namespace tephra::kube
