#include "common.h"

namespace tephra::cmd {
void RegisterController(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("controller", "controller role");
  auto* flags = new CommonFlags();  // lives for the process
  AddCommonFlags(app, flags);
  app->allow_extras();
  app->callback([exit_code] { *exit_code = NotImplemented("controller", "issue #5 (job/podgroup/queue/jobflow controllers)"); });
}
}  // namespace tephra::cmd
