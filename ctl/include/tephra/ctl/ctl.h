// `tephra ctl` / `vcctl`: the vcctl-compatible command line (docs/ctl.md).
//
// Everything a command touches from the outside is injected through Env, so unit tests run the real command
// tree against kube::testing::FakeClient, a FakeClock and string streams, and compare exact output.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/kube/client.h"

namespace tephra::ctl {

// Exit codes. vcctl exits 255 on any error; Tephra distinguishes these so pipelines can branch on them
// (`job wait` uses all of them; other commands return kOk, kError or kUsage).
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,     // API or other runtime error
  kExitUsage = 2,     // bad flags or arguments
  kExitFailed = 3,    // job wait: the job Failed
  kExitAborted = 4,   // job wait: the job was Aborted or Terminated
  kExitTimeout = 5,   // job wait: --timeout passed first
  kExitNotFound = 6,  // job wait: no such job, or it was deleted while waiting
};

// -k/--kubeconfig and -s/--master, present on every command.
struct ConnectionFlags {
  std::string kubeconfig;
  std::string master;
};

// A connected client and where it points (for "cannot reach https://..." messages).
struct Connection {
  kube::ClientPtr client;
  std::string server;
};

using ClientFactory = std::function<core::StatusOr<Connection>(const ConnectionFlags&)>;

struct Env {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  const core::Clock* clock = nullptr;  // Age and Creation columns, `job wait --follow` timestamps
  ClientFactory connect;               // called once per command, after flag parsing
};

// Loads the kubeconfig (--kubeconfig, then $KUBECONFIG, then in-cluster) with command-line retry limits and
// returns a REST client. Its "no configuration" error lists every place it looked.
core::StatusOr<Connection> ConnectToCluster(const ConnectionFlags& flags);

// Runs one command line. args[0] is the program name shown in help ("vcctl" or "tephra ctl"); the rest are
// the command and its flags ("job", "list", "-n", "x"). Never throws.
int Main(const std::vector<std::string>& args, const Env& env);

// True when argv0's basename is "vcctl": the binary was reached through a `vcctl -> tephra` symlink and
// runs this command tree at the top level, so vcctl scripts work unchanged.
bool InvokedAsVcctl(std::string_view argv0);

// The default Env: std::cout/std::cerr, the real clock, ConnectToCluster.
Env DefaultEnv();

}  // namespace tephra::ctl
