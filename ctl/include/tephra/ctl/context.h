// What a running command gets: its streams, clock and a connected client, plus helpers that turn API errors
// into messages naming what failed and what to do.
#pragma once

#include <ostream>
#include <string>

#include "tephra/api/meta.h"
#include "tephra/core/clock.h"
#include "tephra/core/status.h"
#include "tephra/kube/client.h"

namespace tephra::ctl {

struct Context {
  std::ostream& out;
  std::ostream& err;
  const core::Clock& clock;
  kube::Client& client;
  std::string server;  // API server URL, for "cannot reach" messages ("" when unknown)

  // Rewrites an API error's message for a person: not found -> "job default/x not found"; forbidden -> the
  // verb and resource the server refused and the RBAC permission that is missing; unreachable -> the server
  // and what to check. The code is kept, so callers still branch on it.
  core::Status Explain(const core::Status& s, std::string_view verb, const api::ResourceInfo& r,
                       const std::string& ns, const std::string& name = "") const;
};

// The lower-case kind used in messages ("job", "queue", "podgroup", "pod").
std::string KindWord(const api::ResourceInfo& r);

}  // namespace tephra::ctl
