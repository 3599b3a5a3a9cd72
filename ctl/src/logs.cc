// `job logs NAME [-t TASK] [--tail N]`: the logs of a vcjob's pods (label volcano.sh/job-name, task label
// volcano.sh/task-spec) through the API server's pods/log, each pod under a header line.
#include <algorithm>

#include "internal.h"
#include "tephra/api/batch.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"

namespace tephra::ctl::internal {
namespace {

std::string UrlEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else out += Sprintf("%%%02X", c);
  }
  return out;
}

struct Flags {
  std::string ns = "default", name, positional, task;
  int tail = -1;
};

}  // namespace

void RegisterJobLogs(CLI::App* job, Runner& runner) {
  auto f = std::make_shared<Flags>();
  auto* app = job->add_subcommand("logs", "print the logs of a job's pods, each under a header line");
  runner.AddConnectionFlags(app);
  app->add_option("name", f->positional, "the name of job");
  app->add_option("-N,--name", f->name, "the name of job (alternative to the positional NAME)");
  app->add_option("-n,--namespace", f->ns, "the namespace of job")->capture_default_str();
  app->add_option("-t,--task", f->task, "only the pods of this task");
  app->add_option("--tail", f->tail, "only the last N lines of each container (default: all)");
  runner.OnRun(
      app,
      [f]() -> std::string {
        if (f->name.empty()) f->name = f->positional;
        return f->name.empty() ? "job name (NAME or --name/-N) is mandatory" : "";
      },
      [f, app](Context& ctx) {
        const auto& jr = api::Job::Resource();
        if (auto j = ctx.client.Get(jr, f->ns, f->name); !j.ok())
          return Fail(ctx, app, ctx.Explain(j.status(), "get", jr, f->ns, f->name));
        std::string selector = std::string(api::kJobNameKey) + "=" + f->name;
        if (!f->task.empty()) selector += "," + std::string(api::kTaskSpecKey) + "=" + f->task;
        auto pods = ListObjects(ctx, api::Pod::Resource(), f->ns, selector);
        if (!pods.ok()) return Fail(ctx, app, pods.status());
        if (pods->empty()) {
          ctx.err << "job " << f->ns << "/" << f->name << " has no pods"
                  << (f->task.empty() ? "" : " in task " + f->task) << "\n";
          return int{kExitOk};
        }
        std::sort(pods->begin(), pods->end(),
                  [](const json& a, const json& b) { return Str(a, "/metadata/name") < Str(b, "/metadata/name"); });
        int rc = kExitOk;
        for (const auto& pod : *pods) {
          const std::string pod_name = Str(pod, "/metadata/name"), node = Str(pod, "/spec/nodeName");
          const json& containers = At(pod, "/spec/containers");
          for (const auto& c : containers.is_array() ? containers : json::array()) {
            const std::string cname = Str(c, "/name");
            ctx.out << "==> " << f->ns << "/" << pod_name << " (task "
                    << MapValue(At(pod, "/metadata/labels"), api::kTaskSpecKey) << ", container " << cname << ") <==\n";
            std::string path = "/api/v1/namespaces/" + UrlEscape(f->ns) + "/pods/" + UrlEscape(pod_name) +
                               "/log?container=" + UrlEscape(cname);
            if (f->tail >= 0) path += "&tailLines=" + std::to_string(f->tail);
            auto log = ctx.client.Raw("GET", path, nullptr);
            if (!log.ok()) {
              const core::Status& s = log.status();
              if (s.http_status() >= 500)
                ctx.err << "cannot get the logs of pod " << f->ns << "/" << pod_name << ": the API server could not "
                        << "reach the kubelet of node \"" << node << "\" (" << s.message()
                        << "); check that the node is Ready and its kubelet port is reachable from the API server\n";
              else if (s.code() == core::StatusCode::kInvalidArgument)  // 400: not started yet
                ctx.err << "no logs for pod " << f->ns << "/" << pod_name << " yet: " << s.message() << "\n";
              else
                ctx.err << "cannot get the logs of pod " << f->ns << "/" << pod_name << ": "
                        << ctx.Explain(s, "get", api::Pod::Resource(), f->ns, pod_name).message() << "\n";
              rc = kExitError;
              continue;
            }
            const std::string text = log->is_string() ? log->get<std::string>() : log->dump();
            ctx.out << text;
            if (!text.empty() && text.back() != '\n') ctx.out << "\n";
          }
        }
        return rc;
      });
}

}  // namespace tephra::ctl::internal
