// `job why` / `queue why`. Minimal for now: the PodGroup's / Queue's status conditions as stored. The
// diagnosis proper is added here later (see why.h); nothing else lives in this file.
#include "tephra/ctl/why.h"

#include "tephra/api/labels.h"
#include "tephra/api/batch.h"
#include "tephra/api/scheduling.h"
#include "tephra/ctl/ctl.h"
#include "tephra/ctl/output.h"

namespace tephra::ctl {
namespace {

int PrintConditions(Context& ctx, const api::json& obj, const std::string& what, const std::string& output) {
  api::json conds = obj.contains("status") && obj["status"].contains("conditions") ? obj["status"]["conditions"]
                                                                                   : api::json::array();
  if (output == "json") {
    ctx.out << api::json{{"object", what}, {"conditions", conds}}.dump(4) << "\n";
    return kExitOk;
  }
  if (!conds.is_array() || conds.empty()) {
    ctx.out << what << ": no status conditions\n";
    return kExitOk;
  }
  ctx.out << what << ":\n";
  for (const auto& c : conds) ctx.out << "  " << c.dump() << "\n";
  return kExitOk;
}

}  // namespace

int JobWhy(Context& ctx, const std::string& ns, const std::string& name, const std::string& output) {
  // The job's PodGroup is named "<job>-<job uid>" (or "podgroup-..." for plain pods); find it by owner.
  const auto& jr = api::Job::Resource();
  auto job = ctx.client.Get(jr, ns, name);
  if (!job.ok()) {
    ctx.err << "Failed to why job: " << ctx.Explain(job.status(), "get", jr, ns, name).message() << "\n";
    return kExitError;
  }
  const auto& pr = api::PodGroup::Resource();
  auto pgs = kube::ListAll(ctx.client, pr, ns, {});
  if (!pgs.ok()) {
    ctx.err << "Failed to why job: " << ctx.Explain(pgs.status(), "list", pr, ns).message() << "\n";
    return kExitError;
  }
  const std::string uid = (*job)["metadata"].value("uid", "");
  for (const auto& pg : pgs->items) {
    for (const auto& ref : pg["metadata"].value("ownerReferences", api::json::array()))
      if (ref.value("uid", "") == uid)
        return PrintConditions(ctx, pg, "podgroup " + ns + "/" + pg["metadata"].value("name", ""), output);
  }
  ctx.out << "job " << ns << "/" << name << " has no PodGroup yet\n";
  return kExitOk;
}

int QueueWhy(Context& ctx, const std::string& queue, const std::string& output) {
  const auto& qr = api::Queue::Resource();
  auto q = ctx.client.Get(qr, "", queue);
  if (!q.ok()) {
    ctx.err << "Failed to why queue: " << ctx.Explain(q.status(), "get", qr, "", queue).message() << "\n";
    return kExitError;
  }
  return PrintConditions(ctx, *q, "queue " + queue, output);
}

}  // namespace tephra::ctl
