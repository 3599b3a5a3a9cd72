#include "common.h"

namespace tephra::cmd {
void RegisterCtl(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("ctl", "ctl role");
  auto* flags = new CommonFlags();  // lives for the process
  AddCommonFlags(app, flags);
  app->allow_extras();
  app->callback([exit_code] { *exit_code = NotImplemented("ctl", "the vcctl-compatible CLI issue"); });
}
}  // namespace tephra::cmd
