// The jobflow and jobtemplate command groups share create/delete/describe (same flags and output in vcctl).
#pragma once

#include <string>

#include "internal.h"

namespace tephra::ctl::internal {

struct FlowKind {
  const api::ResourceInfo* res;
  std::string kind;  // "JobFlow", in messages ("Created JobFlow: default/x")
  std::string noun;  // "jobflow", "job template" in help and usage errors
};

void RegisterFlowCreate(CLI::App* group, Runner& runner, const FlowKind& k);
void RegisterFlowDelete(CLI::App* group, Runner& runner, const FlowKind& k);
void RegisterFlowDescribe(CLI::App* group, Runner& runner, const FlowKind& k);

}  // namespace tephra::ctl::internal
