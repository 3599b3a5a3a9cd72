// `jobflow create|list|get|delete|describe` (vcctl's pkg/cli/jobflow).
#include "flow_common.h"
#include "tephra/api/flow.h"

namespace tephra::ctl::internal {
namespace {

const api::ResourceInfo& FlowRes() { return api::JobFlow::Resource(); }

// vcctl's PrintJobFlows: each column as wide as its longest cell (header included) plus 4.
void PrintJobFlows(std::ostream& out, const std::vector<json>& flows, const core::Clock& clock) {
  size_t name_w = 4, ns_w = 9, phase_w = 5, age_w = 3;
  for (const auto& f : flows) {
    name_w = std::max(name_w, Str(f, "/metadata/name").size());
    ns_w = std::max(ns_w, Str(f, "/metadata/namespace").size());
    phase_w = std::max(phase_w, Str(f, "/status/state/phase").size());
    age_w = std::max(age_w, Age(Str(f, "/metadata/creationTimestamp"), clock).size());
  }
  auto row = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d) {
    out << Sprintf("%-*s%-*s%-*s%-*s\n", static_cast<int>(name_w + 4), a.c_str(), static_cast<int>(ns_w + 4), b.c_str(),
                   static_cast<int>(phase_w + 4), c.c_str(), static_cast<int>(age_w + 4), d.c_str());
  };
  row("Name", "Namespace", "Phase", "Age");
  for (const auto& f : flows)
    row(Str(f, "/metadata/name"), Str(f, "/metadata/namespace"), Str(f, "/status/state/phase"),
        Age(Str(f, "/metadata/creationTimestamp"), clock));
}

struct Flags {
  std::string name, ns = "default", output;
  bool all_namespaces = false;
};

void RegisterList(CLI::App* group, Runner& runner) {
  auto f = std::make_shared<Flags>();
  auto* app = group->add_subcommand("list", "list jobflows");
  runner.AddConnectionFlags(app);
  app->add_option("-n,--namespace", f->ns, "the namespace of jobflow")->capture_default_str();
  app->add_flag("--all-namespaces", f->all_namespaces, "list jobflows in all namespaces");
  AddOutputFlag(app, &f->output);
  runner.OnRun(app, [f, app](Context& ctx) {
    auto flows = ListObjects(ctx, FlowRes(), f->all_namespaces ? "" : f->ns);
    if (!flows.ok()) return Fail(ctx, app, flows.status());
    Format fmt = ParseFormat(f->output).value_or(Format::kTable);
    if (fmt == Format::kJson || fmt == Format::kYaml) {
      PrintList(ctx.out, *flows, FlowRes(), fmt);
      return int{kExitOk};
    }
    if (flows->empty()) {
      ctx.out << "No resources found\n";
      return int{kExitOk};
    }
    PrintJobFlows(ctx.out, *flows, ctx.clock);
    return int{kExitOk};
  });
}

}  // namespace

void RegisterJobFlow(CLI::App& root, Runner& runner) {
  auto* group = root.add_subcommand("jobflow", "vcctl command line operation jobflow");
  group->require_subcommand(1);
  const FlowKind k{&FlowRes(), "JobFlow", "jobflow"};
  RegisterFlowCreate(group, runner, k);
  RegisterList(group, runner);
  RegisterFlowGet(group, runner, k, PrintJobFlows);
  RegisterFlowDelete(group, runner, k);
  RegisterFlowDescribe(group, runner, k);
}

}  // namespace tephra::ctl::internal
