// The jobflow and jobtemplate command groups share create/get/delete/describe (same flags and output in vcctl).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

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
// `get -N NAME [-n NS] [-o ...]`: one row of the kind's list table, printed by `print`.
using FlowPrinter = std::function<void(std::ostream&, const std::vector<json>&, const core::Clock&)>;
void RegisterFlowGet(CLI::App* group, Runner& runner, const FlowKind& k, FlowPrinter print);

}  // namespace tephra::ctl::internal
