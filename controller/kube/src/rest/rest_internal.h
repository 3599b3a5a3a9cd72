// Internals of the REST client, exposed for unit tests (not a public header: lives under src/).
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "tephra/core/thread_annotations.h"
#include "tephra/kube/client.h"
#include "tephra/kube/transport.h"

namespace tephra::kube::rest {

// "/api/v1/namespaces/ns/pods/name/status" or "/apis/group/version/...". Empty ns for cluster-scoped or
// all-namespace requests; empty name for collections.
std::string ResourcePath(const ResourceInfo& r, const std::string& ns, const std::string& name = "",
                         const std::string& subresource = "");

// Percent-encodes a query value (RFC 3986 unreserved characters stay).
std::string QueryEscape(const std::string& s);

// "?labelSelector=...&limit=..." for list/watch options ("" when none apply).
std::string ListQuery(const ListOptions& o, bool watch);

// The one HTTP -> Status mapping (see client.h): `verb` is "create" for POSTs creating an object.
// Parses a Kubernetes Status body for message/reason; honours Retry-After (seconds) on any status.
core::Status StatusFromResponse(int http_status, const std::string& body, const std::string& retry_after,
                                const std::string& verb, const std::string& what);

// Token bucket: `qps` tokens per second, at most `burst` saved. qps <= 0 means unlimited.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst);
  // Blocks until a token is available; returns how long it waited.
  std::chrono::nanoseconds Acquire() TEPHRA_EXCLUDES(mu_);
  // Non-blocking: time until a token would be available if taken now (takes it). Used by Acquire and tests.
  std::chrono::nanoseconds Reserve(std::chrono::steady_clock::time_point now) TEPHRA_EXCLUDES(mu_);

 private:
  core::Mutex mu_;
  const double qps_;  // read without the lock: fixed at construction
  const double burst_;
  double tokens_ TEPHRA_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_ TEPHRA_GUARDED_BY(mu_){};
  bool started_ TEPHRA_GUARDED_BY(mu_) = false;
};

}  // namespace tephra::kube::rest
