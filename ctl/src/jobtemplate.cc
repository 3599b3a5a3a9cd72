// `jobtemplate create|list|get|delete|describe` (vcctl's pkg/cli/jobtemplate).
#include "flow_common.h"
#include "tephra/api/flow.h"

namespace tephra::ctl::internal {
namespace {

const api::ResourceInfo& TemplateRes() { return api::JobTemplate::Resource(); }

// vcctl's PrintJobTemplates: Name and Namespace, each as wide as its longest cell plus 4.
void PrintTemplates(std::ostream& out, const std::vector<json>& items) {
  size_t name_w = 4, ns_w = 9;
  for (const auto& t : items) {
    name_w = std::max(name_w, Str(t, "/metadata/name").size());
    ns_w = std::max(ns_w, Str(t, "/metadata/namespace").size());
  }
  auto row = [&](const std::string& a, const std::string& b) {
    out << Sprintf("%-*s%-*s\n", static_cast<int>(name_w + 4), a.c_str(), static_cast<int>(ns_w + 4), b.c_str());
  };
  row("Name", "Namespace");
  for (const auto& t : items) row(Str(t, "/metadata/name"), Str(t, "/metadata/namespace"));
}

struct Flags {
  std::string name, ns = "default", output;
};

void RegisterList(CLI::App* group, Runner& runner) {
  auto f = std::make_shared<Flags>();
  auto* app = group->add_subcommand("list", "list jobtemplates");
  runner.AddConnectionFlags(app);
  app->add_option("-n,--namespace", f->ns, "the namespace of job template")->capture_default_str();
  AddOutputFlag(app, &f->output);
  runner.OnRun(app, [f, app](Context& ctx) {
    auto items = ListObjects(ctx, TemplateRes(), f->ns);
    if (!items.ok()) return Fail(ctx, app, items.status());
    Format fmt = ParseFormat(f->output).value_or(Format::kTable);
    if (fmt == Format::kJson || fmt == Format::kYaml) {
      PrintList(ctx.out, *items, TemplateRes(), fmt);
      return int{kExitOk};
    }
    if (items->empty()) {
      ctx.out << "No resources found\n";
      return int{kExitOk};
    }
    PrintTemplates(ctx.out, *items);
    return int{kExitOk};
  });
}

}  // namespace

void RegisterJobTemplate(CLI::App& root, Runner& runner) {
  auto* group = root.add_subcommand("jobtemplate", "vcctl command line operation jobtemplate");
  group->require_subcommand(1);
  const FlowKind k{&TemplateRes(), "JobTemplate", "job template"};
  RegisterFlowCreate(group, runner, k);
  RegisterList(group, runner);
  RegisterFlowGet(group, runner, k, [](std::ostream& out, const std::vector<json>& items, const core::Clock&) {
    PrintTemplates(out, items);
  });
  RegisterFlowDelete(group, runner, k);
  RegisterFlowDescribe(group, runner, k);
}

}  // namespace tephra::ctl::internal
