// `create -f`, `get`, `delete` and `describe`, identical in vcctl for jobflow and jobtemplate but for the kind.
#include "flow_common.h"

namespace tephra::ctl::internal {
namespace {

struct Flags {
  std::string name, ns = "default", file, format = "yaml", output;
};

}  // namespace

void RegisterFlowCreate(CLI::App* group, Runner& runner, const FlowKind& k) {
  auto f = std::make_shared<Flags>();
  auto* app = group->add_subcommand("create", "create a " + k.noun);
  runner.AddConnectionFlags(app);
  app->add_option("-f,--file", f->file, "the path to the YAML file containing the " + k.noun);
  runner.OnRun(
      app, [f, k] { return f->file.empty() ? "the path to the YAML file (-f) is mandatory" : ""; },
      [f, app, k](Context& ctx) {
        auto docs = ReadManifests(f->file);
        if (!docs.ok()) return Fail(ctx, app, docs.status());
        int rc = kExitOk;
        for (auto& d : *docs) {
          if (!d["metadata"].is_object()) d["metadata"] = json::object();
          if (Str(d, "/metadata/namespace").empty()) d["metadata"]["namespace"] = "default";
          d["apiVersion"] = k.res->ApiVersion();
          d["kind"] = std::string(k.res->kind);
          const std::string ns = Str(d, "/metadata/namespace"), name = Str(d, "/metadata/name");
          auto created = ctx.client.Create(*k.res, ns, d);
          if (created.ok()) {
            ctx.out << "Created " << k.kind << ": " << ns << "/" << name << "\n";
          } else {  // vcctl goes on with the next document; Tephra also exits non-zero at the end
            ctx.out << "Failed to create " << k.kind << ": "
                    << ctx.Explain(created.status(), "create", *k.res, ns, name).message() << "\n";
            rc = kExitError;
          }
        }
        return rc;
      });
}

void RegisterFlowDelete(CLI::App* group, Runner& runner, const FlowKind& k) {
  auto f = std::make_shared<Flags>();
  auto* app = group->add_subcommand("delete", "delete a " + k.noun);
  runner.AddConnectionFlags(app);
  app->add_option("-N,--name", f->name, "the name of " + k.noun);
  app->add_option("-n,--namespace", f->ns, "the namespace of " + k.noun)->capture_default_str();
  app->add_option("-f,--file", f->file, "the path to the YAML file containing the " + k.noun);
  runner.OnRun(
      app, [f, k] { return f->file.empty() && f->name.empty() ? k.noun + " name must be specified" : ""; },
      [f, app, k](Context& ctx) {
        if (!f->file.empty()) {
          auto docs = ReadManifests(f->file);
          if (!docs.ok()) return Fail(ctx, app, docs.status());
          int rc = kExitOk;
          for (const auto& d : *docs) {
            std::string ns = Str(d, "/metadata/namespace"), name = Str(d, "/metadata/name");
            if (ns.empty()) ns = "default";
            auto s = ctx.client.Delete(*k.res, ns, name);
            if (s.ok()) {
              ctx.out << "Deleted " << k.kind << ": " << ns << "/" << name << "\n";
            } else {
              ctx.out << "Failed to delete " << k.kind << ": " << ctx.Explain(s, "delete", *k.res, ns, name).message()
                      << "\n";
              rc = kExitError;
            }
          }
          return rc;
        }
        auto s = ctx.client.Delete(*k.res, f->ns, f->name);
        if (!s.ok()) return Fail(ctx, app, ctx.Explain(s, "delete", *k.res, f->ns, f->name));
        ctx.out << "Deleted " << k.kind << ": " << f->ns << "/" << f->name << "\n";
        return int{kExitOk};
      });
}

void RegisterFlowDescribe(CLI::App* group, Runner& runner, const FlowKind& k) {
  auto f = std::make_shared<Flags>();
  auto* app = group->add_subcommand("describe", "describe a " + k.noun);
  runner.AddConnectionFlags(app);
  app->add_option("-N,--name", f->name, "the name of " + k.noun + " (empty: every one in the namespace)");
  app->add_option("-n,--namespace", f->ns, "the namespace of " + k.noun)->capture_default_str();
  app->add_option("-o,--format,--output", f->format, "the format of output: yaml or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"yaml", "json"}));
  runner.OnRun(app, [f, app, k](Context& ctx) {
    Format fmt = f->format == "json" ? Format::kJson : Format::kYaml;
    std::vector<json> objs;
    if (f->name.empty()) {
      auto all = ListObjects(ctx, *k.res, f->ns);
      if (!all.ok()) return Fail(ctx, app, all.status());
      objs = std::move(*all);
    } else {
      auto one = ctx.client.Get(*k.res, f->ns, f->name);
      if (!one.ok()) return Fail(ctx, app, ctx.Explain(one.status(), "get", *k.res, f->ns, f->name));
      objs.push_back(std::move(*one));
    }
    for (size_t i = 0; i < objs.size(); ++i) {
      PrintObject(ctx.out, objs[i], *k.res, fmt);
      if (objs.size() != 1 && i + 1 < objs.size()) ctx.out << "\n\n";
    }
    return int{kExitOk};
  });
}

void RegisterFlowGet(CLI::App* group, Runner& runner, const FlowKind& k, FlowPrinter print) {
  auto f = std::make_shared<Flags>();
  auto* app = group->add_subcommand("get", "get a " + k.noun);
  runner.AddConnectionFlags(app);
  app->add_option("-N,--name", f->name, "the name of " + k.noun);
  app->add_option("-n,--namespace", f->ns, "the namespace of " + k.noun)->capture_default_str();
  AddOutputFlag(app, &f->output);
  runner.OnRun(
      app, [f, k] { return f->name.empty() ? "name is mandatory to get the particular " + k.noun + " details" : ""; },
      [f, k, app, print](Context& ctx) {
        auto obj = ctx.client.Get(*k.res, f->ns, f->name);
        if (!obj.ok()) return Fail(ctx, app, ctx.Explain(obj.status(), "get", *k.res, f->ns, f->name));
        Format fmt = ParseFormat(f->output).value_or(Format::kTable);
        if (fmt == Format::kJson || fmt == Format::kYaml) PrintObject(ctx.out, *obj, *k.res, fmt);
        else print(ctx.out, {*obj}, ctx.clock);
        return int{kExitOk};
      });
}

}  // namespace tephra::ctl::internal
