// `queue create|delete|operate|list|get` (vcctl's pkg/cli/queue) and the registration of `queue why`.
#include <map>

#include "internal.h"
#include "tephra/api/batch.h"
#include "tephra/api/bus.h"
#include "tephra/api/scheduling.h"
#include "tephra/ctl/why.h"

namespace tephra::ctl::internal {
namespace {

const api::ResourceInfo& QueueRes() { return api::Queue::Resource(); }

// vcctl's PodGroupStatistics: PodGroups per phase, counted client-side from a list of all PodGroups.
struct PgStats {
  int inqueue = 0, pending = 0, running = 0, unknown = 0, completed = 0;
  void Add(const json& pg) {
    const std::string phase = Str(pg, "/status/phase");
    if (phase == "Inqueue") ++inqueue;
    else if (phase == "Pending") ++pending;
    else if (phase == "Running") ++running;
    else if (phase == "Unknown") ++unknown;
    else if (phase == "Completed") ++completed;
  }
};

void PrintQueues(std::ostream& out, const std::vector<json>& queues, std::map<std::string, PgStats>& stats,
                 bool wide) {
  std::string head = Sprintf("%-25s%-8s%-8s%-8s%-8s%-8s%-8s%-8s%-8s", "Name", "Weight", "State", "Parent", "Inqueue",
                             "Pending", "Running", "Unknown", "Completed");
  if (wide) head += Sprintf("%-12s%-10s", "Reclaimable", "Priority");
  out << head << "\n";
  for (const auto& q : queues) {
    const PgStats& s = stats[Str(q, "/metadata/name")];
    std::string row = Sprintf("%-25s%-8d%-8s%-8s%-8d%-8d%-8d%-8d%-8d", Str(q, "/metadata/name").c_str(),
                              static_cast<int>(Int(q, "/spec/weight")), Str(q, "/status/state").c_str(),
                              Str(q, "/spec/parent").c_str(), s.inqueue, s.pending, s.running, s.unknown, s.completed);
    if (wide) {
      const json& r = At(q, "/spec/reclaimable");
      row += Sprintf("%-12s%-10d", r.is_boolean() ? (r.get<bool>() ? "true" : "false") : "",
                     static_cast<int>(Int(q, "/spec/priority")));
    }
    out << row << "\n";
  }
}

// Lists all PodGroups and counts them per queue in `stats` (only queues already in it).
core::Status CountPodGroups(Context& ctx, std::map<std::string, PgStats>* stats) {
  auto pgs = ListObjects(ctx, api::PodGroup::Resource(), "");
  if (!pgs.ok()) return pgs.status().Annotate("failed to list podgroups");
  for (const auto& pg : *pgs) {
    auto it = stats->find(Str(pg, "/spec/queue"));
    if (it != stats->end()) it->second.Add(pg);
  }
  return core::Status::OK();
}

struct QueueFlags {
  std::string name, state = "Open", action, output;
  int32_t weight = 0;
};

void RegisterCreate(CLI::App* queue, Runner& runner) {
  auto f = std::make_shared<QueueFlags>();
  f->name = "test";
  f->weight = 1;
  auto* app = queue->add_subcommand("create", "creates queue");
  runner.AddConnectionFlags(app);
  app->add_option("-n,--name", f->name, "the name of queue")->capture_default_str();
  app->add_option("-w,--weight", f->weight, "the weight of the queue")->capture_default_str();
  app->add_option("-S,--state", f->state, "the state of queue")->capture_default_str();
  runner.OnRun(app, [f, app](Context& ctx) {
    const auto& r = QueueRes();
    // status.state is sent like vcctl does; servers with the status subresource ignore it.
    json q = {{"apiVersion", r.ApiVersion()},
              {"kind", std::string(r.kind)},
              {"metadata", {{"name", f->name}}},
              {"spec", {{"weight", f->weight}}},
              {"status", {{"state", f->state}}}};
    auto created = ctx.client.Create(r, "", q);
    if (!created.ok()) return Fail(ctx, app, ctx.Explain(created.status(), "create", r, "", f->name));
    return int{kExitOk};
  });
}

void RegisterDelete(CLI::App* queue, Runner& runner) {
  auto f = std::make_shared<QueueFlags>();
  auto* app = queue->add_subcommand("delete", "delete queue");
  runner.AddConnectionFlags(app);
  app->add_option("-n,--name", f->name, "the name of queue");
  runner.OnRun(
      app, [f] { return f->name.empty() ? "queue name must be specified" : ""; },
      [f, app](Context& ctx) {
        auto s = ctx.client.Delete(QueueRes(), "", f->name);
        if (!s.ok()) return Fail(ctx, app, ctx.Explain(s, "delete", QueueRes(), "", f->name));
        return int{kExitOk};
      });
}

void RegisterOperate(CLI::App* queue, Runner& runner) {
  auto f = std::make_shared<QueueFlags>();
  auto* app = queue->add_subcommand("operate", "operate queue");
  runner.AddConnectionFlags(app);
  app->add_option("-n,--name", f->name, "the name of queue");
  app->add_option("-w,--weight", f->weight, "the weight of the queue")->capture_default_str();
  app->add_option("-a,--action", f->action, "operate action to queue, valid actions are open, close, update");
  runner.OnRun(
      app,
      [f]() -> std::string {
        if (f->name.empty()) return "queue name must be specified";
        if (f->action == "update" && f->weight == 0)
          return "when update queue " + f->name + ", weight must be specified, the value must be greater than 0";
        if (f->action.empty()) return "action can not be null";
        if (f->action != "open" && f->action != "close" && f->action != "update")
          return "action " + f->action + " invalid, valid actions are open, close and update";
        // The controller would refuse the Command anyway (Volcano's too); saying so here spares a Command that
        // can only fail and tells the user at once.
        if (f->action == "close" && f->name == api::kRootQueue)
          return "the root queue cannot be closed: every queue is under it";
        return "";
      },
      [f, app](Context& ctx) {
        const auto& r = QueueRes();
        if (f->action == "update") {  // vcctl patches the weight directly; no Command
          auto p = ctx.client.Patch(r, "", f->name, kube::PatchType::kMerge, json{{"spec", {{"weight", f->weight}}}});
          if (!p.ok()) return Fail(ctx, app, ctx.Explain(p.status(), "patch", r, "", f->name));
          return int{kExitOk};
        }
        auto q = ctx.client.Get(r, "", f->name);
        if (!q.ok()) return Fail(ctx, app, ctx.Explain(q.status(), "get", r, "", f->name));
        // open/close: a Command the controller executes, created in "default" like vcctl's.
        auto action = f->action == "open" ? api::kActionOpenQueue : api::kActionCloseQueue;
        const auto& cr = api::Command::Resource();
        auto created = ctx.client.Create(cr, "default", NewCommand(*q, r, action, "default"));
        if (!created.ok()) return Fail(ctx, app, ctx.Explain(created.status(), "create", cr, "default"));
        return int{kExitOk};
      });
}

void RegisterList(CLI::App* queue, Runner& runner) {
  auto f = std::make_shared<QueueFlags>();
  auto* app = queue->add_subcommand("list", "lists all the queue");
  runner.AddConnectionFlags(app);
  AddOutputFlag(app, &f->output);
  runner.OnRun(app, [f, app](Context& ctx) {
    auto queues = ListObjects(ctx, QueueRes(), "");
    if (!queues.ok()) return Fail(ctx, app, queues.status());
    Format fmt = ParseFormat(f->output).value_or(Format::kTable);
    if (fmt == Format::kJson || fmt == Format::kYaml) {
      PrintList(ctx.out, *queues, QueueRes(), fmt);
      return int{kExitOk};
    }
    if (queues->empty()) {
      ctx.out << "No resources found\n";
      return int{kExitOk};
    }
    std::map<std::string, PgStats> stats;
    for (const auto& q : *queues) stats[Str(q, "/metadata/name")];
    if (auto s = CountPodGroups(ctx, &stats); !s.ok()) return Fail(ctx, app, s);
    PrintQueues(ctx.out, *queues, stats, fmt == Format::kWide);
    return int{kExitOk};
  });
}

void RegisterGet(CLI::App* queue, Runner& runner) {
  auto f = std::make_shared<QueueFlags>();
  auto* app = queue->add_subcommand("get", "get a queue");
  runner.AddConnectionFlags(app);
  app->add_option("-n,--name", f->name, "the name of queue");
  AddOutputFlag(app, &f->output);
  runner.OnRun(
      app, [f] { return f->name.empty() ? "name is mandatory to get the particular queue details" : ""; },
      [f, app](Context& ctx) {
        auto q = ctx.client.Get(QueueRes(), "", f->name);
        if (!q.ok()) return Fail(ctx, app, ctx.Explain(q.status(), "get", QueueRes(), "", f->name));
        Format fmt = ParseFormat(f->output).value_or(Format::kTable);
        if (fmt == Format::kJson || fmt == Format::kYaml) {
          PrintObject(ctx.out, *q, QueueRes(), fmt);
          return int{kExitOk};
        }
        std::map<std::string, PgStats> stats;
        stats[f->name];
        if (auto s = CountPodGroups(ctx, &stats); !s.ok()) return Fail(ctx, app, s);
        PrintQueues(ctx.out, {*q}, stats, fmt == Format::kWide);
        return int{kExitOk};
      });
}

void RegisterWhy(CLI::App* queue, Runner& runner) {
  auto f = std::make_shared<QueueFlags>();
  auto* app = queue->add_subcommand("why", "explain a queue's state (its status conditions)");
  runner.AddConnectionFlags(app);
  app->add_option("-n,--name", f->name, "the name of queue");
  app->add_option("-o,--output", f->output, "json: machine-readable")->check(CLI::IsMember({"json"}));
  runner.OnRun(
      app, [f] { return f->name.empty() ? "queue name must be specified" : ""; },
      [f](Context& ctx) { return QueueWhy(ctx, f->name, f->output); });
}

}  // namespace

void RegisterQueue(CLI::App& root, Runner& runner) {
  auto* queue = root.add_subcommand("queue", "Queue Operations");
  queue->require_subcommand(1);
  RegisterCreate(queue, runner);
  RegisterDelete(queue, runner);
  RegisterOperate(queue, runner);
  RegisterList(queue, runner);
  RegisterGet(queue, runner);
  RegisterWhy(queue, runner);
}

}  // namespace tephra::ctl::internal
