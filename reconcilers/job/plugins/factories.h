// Internal: one factory per plugin, each defined in its own file. Use NewJobPlugin() from plugin.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "plugin.h"

namespace tephra::reconcilers::job::internal {

// Parsed flag values with defaults applied.
using Flags = std::map<std::string, std::string>;

// Parses `args` against `defaults` (every flag the plugin defines, with its default value) as Go's flag
// package would; logs where parsing stopped and why.
Flags ParsePluginFlags(std::string_view plugin, const std::vector<std::string>& args, const Flags& defaults,
                       const std::vector<std::string>& bool_flags, const std::vector<std::string>& int_flags,
                       std::vector<std::string>* log);
bool FlagBool(const Flags& f, const std::string& name);
int FlagInt(const Flags& f, const std::string& name, int fallback);

JobPluginPtr NewEnvPlugin(const std::vector<std::string>& args, std::vector<std::string>* log);
JobPluginPtr NewSvcPlugin(const std::vector<std::string>& args, std::vector<std::string>* log);
JobPluginPtr NewSshPlugin(const std::vector<std::string>& args, std::vector<std::string>* log);
JobPluginPtr NewPytorchPlugin(const std::vector<std::string>& args, std::vector<std::string>* log);
JobPluginPtr NewMpiPlugin(const std::vector<std::string>& args, std::vector<std::string>* log);
JobPluginPtr NewTensorflowPlugin(const std::vector<std::string>& args, std::vector<std::string>* log);
JobPluginPtr NewHcclRankPlugin(const std::vector<std::string>& args, std::vector<std::string>* log);
JobPluginPtr NewRayPlugin(const std::vector<std::string>& args, std::vector<std::string>* log);

}  // namespace tephra::reconcilers::job::internal
