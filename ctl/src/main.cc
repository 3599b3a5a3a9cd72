// The command tree and its runner: parsing, usage errors (exit 2), connecting, vcctl's error line.
#include <algorithm>
#include <exception>
#include <iostream>

#include "internal.h"
#include "tephra/core/version.h"

namespace tephra::ctl {
namespace internal {

void Runner::AddConnectionFlags(CLI::App* app) {
  app->add_option("-k,--kubeconfig", conn_.kubeconfig, "(optional) absolute path to the kubeconfig file");
  app->add_option("-s,--master", conn_.master, "the address of apiserver");
}

std::string CommandPath(const CLI::App* app) {
  std::string path;
  for (const CLI::App* cur = app; cur != nullptr && cur->get_parent() != nullptr; cur = cur->get_parent()) {
    if (!path.empty()) path += ' ';
    path += cur->get_name();
  }
  return path;
}

void Runner::OnRun(CLI::App* app, std::function<std::string()> check, std::function<int(Context&)> run) {
  app->callback([this, app, check = std::move(check), run = std::move(run)] {
    std::ostream& err = *env_.err;
    if (check) {
      std::string usage = check();
      if (!usage.empty()) {
        err << "Failed to " << CommandPath(app) << ": " << usage << "\n";
        exit_code_ = kExitUsage;
        return;
      }
    }
    auto conn = env_.connect(conn_);
    if (!conn.ok()) {
      err << "Failed to " << CommandPath(app) << ": " << conn.status().message() << "\n";
      exit_code_ = kExitError;
      return;
    }
    Context ctx{*env_.out, err, *env_.clock, *conn->client, conn->server};
    try {
      exit_code_ = run(ctx);
    } catch (const std::exception& e) {  // nlohmann type errors on unexpected server data
      err << "Failed to " << CommandPath(app) << ": internal error: " << e.what() << "\n";
      exit_code_ = kExitError;
    }
  });
}

int Fail(Context& ctx, const CLI::App* app, const core::Status& s) {
  ctx.err << "Failed to " << CommandPath(app) << ": " << s.message() << "\n";
  return kExitError;
}

void AddOutputFlag(CLI::App* app, std::string* out) {
  app->add_option("-o,--output", *out, "output format: json, yaml or wide (default: vcctl's table)")
      ->check(CLI::IsMember({"json", "yaml", "wide"}));
}

void RegisterVersion(CLI::App& root, Runner& runner) {
  auto* app = root.add_subcommand("version", "Print the version information");
  // No API call: vcctl's version needs no cluster either.
  app->callback([&runner] {
    std::ostream& out = *runner.env().out;
    out << "API Version: v1alpha1\n"
        << "Version: " << core::Version() << "\n"
        << "Git SHA: " << core::GitCommit() << "\n"
        << "Built At: Not provided.\n"
        << "Compiler: " << __VERSION__ << "\n";
  });
}

}  // namespace internal

int Main(const std::vector<std::string>& args, const Env& env) {
  using namespace internal;
  const std::string prog = args.empty() ? "vcctl" : args[0];
  CLI::App app{"Volcano-compatible command line (vcctl) for Tephra. Exit codes: 0 ok, 1 error, 2 usage; "
               "`job wait` also 3 Failed, 4 Aborted/Terminated, 5 timed out, 6 not found.",
               prog};
  app.require_subcommand(1);
  Runner runner(env);
  RegisterJob(app, runner);
  RegisterQueue(app, runner);
  RegisterJobTemplate(app, runner);
  RegisterJobFlow(app, runner);
  RegisterPod(app, runner);
  RegisterVersion(app, runner);
  std::vector<std::string> rest(args.size() > 1 ? args.begin() + 1 : args.end(), args.end());
  std::reverse(rest.begin(), rest.end());
  try {
    app.parse(rest);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, *env.out, *env.err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, *env.out, *env.err);
  } catch (const CLI::ParseError& e) {
    *env.err << prog << ": " << e.what() << "\nRun with --help for more information.\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    *env.err << prog << ": " << e.what() << "\n";
    return kExitError;
  }
  return runner.exit_code();
}

bool InvokedAsVcctl(std::string_view argv0) {
  size_t slash = argv0.rfind('/');
  return (slash == std::string_view::npos ? argv0 : argv0.substr(slash + 1)) == "vcctl";
}

Env DefaultEnv() {
  Env env;
  env.out = &std::cout;
  env.err = &std::cerr;
  env.clock = &core::RealClock::Get();
  env.connect = ConnectToCluster;
  return env;
}

}  // namespace tephra::ctl
