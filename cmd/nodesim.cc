#include "common.h"

namespace tephra::cmd {
void RegisterNodesim(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("nodesim", "nodesim role");
  auto* flags = new CommonFlags();  // lives for the process
  AddCommonFlags(app, flags);
  app->allow_extras();
  app->callback([exit_code] { *exit_code = NotImplemented("nodesim", "issue #3 (node simulator)"); });
}
}  // namespace tephra::cmd
