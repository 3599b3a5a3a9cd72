#include "common.h"

namespace tephra::cmd {
void RegisterWebhook(CLI::App& root, int* exit_code) {
  auto* app = root.add_subcommand("webhook", "webhook role");
  auto* flags = new CommonFlags();  // lives for the process
  AddCommonFlags(app, flags);
  app->allow_extras();
  app->callback([exit_code] { *exit_code = NotImplemented("webhook", "the admission webhook issue"); });
}
}  // namespace tephra::cmd
