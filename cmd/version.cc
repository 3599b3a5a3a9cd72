#include <cstdio>

#include "common.h"
#include "tephra/core/version.h"

namespace tephra::cmd {
void RegisterVersion(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("version", "Print the version and git commit");
  app->callback([exit_code] {
    std::printf("tephra %.*s (commit %.*s)\n", static_cast<int>(core::Version().size()), core::Version().data(),
                static_cast<int>(core::GitCommit().size()), core::GitCommit().data());
    *exit_code = 0;
  });
}
}  // namespace tephra::cmd
