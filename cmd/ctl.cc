#include <string>
#include <vector>

#include "common.h"
#include "tephra/ctl/ctl.h"

namespace tephra::cmd {
// `tephra ctl ...`: everything after "ctl" goes to the ctl library, which owns the vcctl command tree.
void RegisterCtl(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("ctl", "vcctl-compatible command line (also: invoke this binary as `vcctl`)");
  app->prefix_command();
  app->set_help_flag();  // --help belongs to the ctl command tree
  app->callback([app, exit_code] {
    std::vector<std::string> args{"tephra ctl"};
    for (auto& a : app->remaining()) args.push_back(a);
    *exit_code = ctl::Main(args, ctl::DefaultEnv());
  });
}

int VcctlMain(int argc, char** argv) {
  std::vector<std::string> args{"vcctl"};
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return ctl::Main(args, ctl::DefaultEnv());
}
}  // namespace tephra::cmd
