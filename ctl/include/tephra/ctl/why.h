// `job why` and `queue why`: why a job or queue is where it is. The full diagnosis lives in src/why.cc (owned
// separately); today it prints the PodGroup's / Queue's status conditions as stored.
#pragma once

#include <string>

#include "tephra/ctl/context.h"

namespace tephra::ctl {

// `job why -N NAME -n NS [-o json]`. Returns an ExitCode (ctl.h).
int JobWhy(Context& ctx, const std::string& ns, const std::string& name, const std::string& output);
// `queue why -n NAME [-o json]`.
int QueueWhy(Context& ctx, const std::string& queue, const std::string& output);

}  // namespace tephra::ctl
