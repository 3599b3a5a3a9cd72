// Kept in its own translation unit: kube/transport.h and kube/http_server.h both declare
// tephra::kube::HttpRequest/HttpResponse, so no file may include both (manager.cc needs the server).
#include "tephra/kube/transport.h"

namespace tephra::reconcilers::manager {

core::StatusOr<kube::ClientPtr> NewManagerClient(const kube::RestConfig& cfg) { return kube::NewClient(cfg); }

}  // namespace tephra::reconcilers::manager
