#include "common.h"

namespace tephra::cmd {
void RegisterScheduler(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("scheduler", "scheduler role");
  auto* flags = new CommonFlags();  // lives for the process
  AddCommonFlags(app, flags);
  app->allow_extras();
  app->callback([exit_code] { *exit_code = NotImplemented("scheduler", "issue #6 (batch scheduler)"); });
}
}  // namespace tephra::cmd
