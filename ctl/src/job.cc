// `job run|list|view|suspend|resume|delete` (vcctl's pkg/cli/job), plus the registration of Tephra's
// `job wait`, `job logs` (own files) and `job why` (why.cc).
#include <map>
#include <set>

#include "internal.h"
#include "tephra/api/batch.h"
#include "tephra/api/bus.h"
#include "tephra/api/core_v1.h"
#include "tephra/api/labels.h"
#include "tephra/core/quantity.h"
#include "tephra/ctl/why.h"

namespace tephra::ctl::internal {
namespace {

const api::ResourceInfo& JobRes() { return api::Job::Resource(); }

// --- list -----------------------------------------------------------------------------------------------

struct ListFlags {
  std::string queue, ns = "default", scheduler, selector, output;
  bool all_namespaces = false;
};

int32_t Replicas(const json& job) {
  int32_t n = 0;
  const json& tasks = At(job, "/spec/tasks");
  if (tasks.is_array())
    for (const auto& t : tasks) n += static_cast<int32_t>(Int(t, "/replicas"));
  return n;
}

std::string JobType(const json& job) {
  std::string t = MapValue(At(job, "/metadata/labels"), api::kJobTypeKey);
  return t.empty() ? std::string(api::kDefaultJobType) : t;
}

// The start estimate shown by `list -o wide`: from the Queued condition of the job's PodGroup (docs/reservations.md).
std::string EstimatedStart(const json* pg) {
  if (!pg) return "-";
  const json& conds = At(*pg, "/status/conditions");
  if (!conds.is_array()) return "-";
  for (const auto& c : conds) {
    if (c.value("type", "") != "Queued" || c.value("status", "") != "True") continue;
    auto e = ParseStartEstimate(c.value("message", ""));
    if (!e) return "-";
    if (e->kind == "reservation") return e->at;
    if (e->kind == "planned") return "~" + e->at;
    return "unknown";
  }
  return "-";
}

void PrintJobs(std::ostream& out, const std::vector<json>& jobs, bool all_namespaces, bool wide,
               const std::map<std::string, json>& pod_groups = {}) {
  // vcctl's getMaxLen: the longest name / namespace (at least the header) plus 3.
  int name_w = 4, ns_w = 9, queue_w = 5;
  for (const auto& j : jobs) {
    name_w = std::max<int>(name_w, static_cast<int>(Str(j, "/metadata/name").size()));
    ns_w = std::max<int>(ns_w, static_cast<int>(Str(j, "/metadata/namespace").size()));
    queue_w = std::max<int>(queue_w, static_cast<int>(Str(j, "/spec/queue").size()));
  }
  name_w += 3;
  ns_w += 3;
  queue_w += 3;
  std::string head = all_namespaces ? Sprintf("%-*s", ns_w, "Namespace") : "";
  head += Sprintf("%-*s%-15s%-12s%-12s%-12s%-6s%-10s%-10s%-12s%-10s%-12s%-10s", name_w, "Name", "Creation", "Phase",
                  "JobType", "Replicas", "Min", "Pending", "Running", "Succeeded", "Failed", "Unknown", "RetryCount");
  if (wide) head += Sprintf("%-*s%-12s%-12s%-23s", queue_w, "Queue", "Terminating", "Version", "EstimatedStart");
  out << head << "\n";
  for (const auto& j : jobs) {
    std::string row = all_namespaces ? Sprintf("%-*s", ns_w, Str(j, "/metadata/namespace").c_str()) : "";
    row += Sprintf("%-*s%-15s%-12s%-12s%-12d%-6d%-10d%-10d%-12d%-10d%-12d%-10d", name_w,
                   Str(j, "/metadata/name").c_str(), GoDate(Str(j, "/metadata/creationTimestamp")).c_str(),
                   Str(j, "/status/state/phase").c_str(), JobType(j).c_str(), Replicas(j),
                   static_cast<int>(Int(j, "/status/minAvailable")), static_cast<int>(Int(j, "/status/pending")),
                   static_cast<int>(Int(j, "/status/running")), static_cast<int>(Int(j, "/status/succeeded")),
                   static_cast<int>(Int(j, "/status/failed")), static_cast<int>(Int(j, "/status/unknown")),
                   static_cast<int>(Int(j, "/status/retryCount")));
    if (wide) {
      // The controller names a job's PodGroup "<job>-<job uid>".
      auto pg = pod_groups.find(Str(j, "/metadata/namespace") + "/" + Str(j, "/metadata/name") + "-" +
                                Str(j, "/metadata/uid"));
      row += Sprintf("%-*s%-12d%-12d%-23s", queue_w, Str(j, "/spec/queue").c_str(),
                     static_cast<int>(Int(j, "/status/terminating")), static_cast<int>(Int(j, "/status/version")),
                     EstimatedStart(pg == pod_groups.end() ? nullptr : &pg->second).c_str());
    }
    out << row << "\n";
  }
}

void RegisterList(CLI::App* job, Runner& runner) {
  auto f = std::make_shared<ListFlags>();
  auto* app = job->add_subcommand("list", "list job information");
  runner.AddConnectionFlags(app);
  app->add_option("-q,--queue", f->queue, "list job with specified queue name");
  app->add_option("-n,--namespace", f->ns, "the namespace of job")->capture_default_str();
  app->add_option("-S,--scheduler", f->scheduler, "list job with specified scheduler name");
  app->add_flag("--all-namespaces", f->all_namespaces, "list jobs in all namespaces");
  app->add_option("--selector", f->selector, "fuzzy matching jobName");
  AddOutputFlag(app, &f->output);
  runner.OnRun(app, [f, app](Context& ctx) {
    const std::string ns = f->all_namespaces ? "" : f->ns;
    auto jobs = ListObjects(ctx, JobRes(), ns);
    if (!jobs.ok()) return Fail(ctx, app, jobs.status());
    std::vector<json> kept;
    for (auto& j : *jobs) {
      if (!f->queue.empty() && f->queue != Str(j, "/spec/queue")) continue;
      if (!f->scheduler.empty() && f->scheduler != Str(j, "/spec/schedulerName")) continue;
      if (!f->selector.empty() && Str(j, "/metadata/name").find(f->selector) == std::string::npos) continue;
      kept.push_back(std::move(j));
    }
    Format fmt = ParseFormat(f->output).value_or(Format::kTable);
    if (fmt == Format::kJson || fmt == Format::kYaml) {
      PrintList(ctx.out, kept, JobRes(), fmt);
      return int{kExitOk};
    }
    if (kept.empty()) {
      ctx.out << "No resources found\n";
      return int{kExitOk};
    }
    std::map<std::string, json> pod_groups;
    if (fmt == Format::kWide) {
      // One more list, only for the wide table: its start estimates live on the PodGroups.
      auto pgs = ListObjects(ctx, api::PodGroup::Resource(), ns);
      if (!pgs.ok()) return Fail(ctx, app, pgs.status());
      for (auto& pg : *pgs) {
        std::string key = Str(pg, "/metadata/namespace") + "/" + Str(pg, "/metadata/name");
        pod_groups[key] = std::move(pg);  // the key first: json's operator= takes its argument by value
      }
    }
    PrintJobs(ctx.out, kept, f->all_namespaces, fmt == Format::kWide, pod_groups);
    return int{kExitOk};
  });
}

// --- view -----------------------------------------------------------------------------------------------

// vcctl's WriteLine: two spaces per level.
void Line(std::ostream& out, int level, const std::string& s) { out << std::string(2 * level, ' ') << s; }

std::string GoStringSlice(const json& v) {  // fmt's %v of a []string: "[a b]"
  std::string s = "[";
  if (v.is_array())
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) s += ' ';
      s += v[i].is_string() ? v[i].get<std::string>() : v[i].dump();
    }
  return s + "]";
}

std::string Quantity(const json& resources, const char* which, const char* name) {
  const json& v = At(resources, (std::string("/") + which + "/" + name).c_str());
  if (v.is_string() || v.is_number()) {
    json raw = v;
    core::Quantity q;
    if (api::Decode(raw, &q).ok()) return q.ToString();
  }
  return "0";  // resource.Quantity's zero value
}

std::string Annotation(const json& meta, const std::string& key) { return MapValue(At(meta, "/annotations"), key); }

void PrintJobInfo(std::ostream& out, const json& job) {
  const json& meta = At(job, "/metadata");
  Line(out, 0, "Name:       \t" + Str(meta, "/name") + "\n");
  Line(out, 0, "Namespace:  \t" + Str(meta, "/namespace") + "\n");
  const json& labels = At(meta, "/labels");
  Line(out, 0, labels.is_object() && !labels.empty() ? "Labels:     \t" + labels.dump() + "\n" : "Labels:     \t<none>\n");
  const json& ann = At(meta, "/annotations");
  Line(out, 0, ann.is_object() && !ann.empty() ? "Annotations:\t" + ann.dump() + "\n" : "Annotations:\t<none>\n");
  Line(out, 0, "API Version:\t" + Str(job, "/apiVersion") + "\n");
  Line(out, 0, "Kind:       \t" + Str(job, "/kind") + "\n");
  Line(out, 0, "Metadata:\n");
  Line(out, 1, "Creation Timestamp:\t" + GoTimeString(Str(meta, "/creationTimestamp")) + "\n");
  Line(out, 1, "Generate Name:     \t" + Str(meta, "/generateName") + "\n");
  Line(out, 1, "Generation:        \t" + std::to_string(Int(meta, "/generation")) + "\n");
  Line(out, 1, "Resource Version:  \t" + Str(meta, "/resourceVersion") + "\n");
  Line(out, 1, "UID:               \t" + Str(meta, "/uid") + "\n");
  Line(out, 0, "Spec:\n");
  Line(out, 1, "Min Available:     \t" + std::to_string(Int(job, "/spec/minAvailable")) + "\n");
  Line(out, 1, "Plugins:\n");
  Line(out, 2, "Env:\t" + GoStringSlice(At(job, "/spec/plugins/env")) + "\n");
  Line(out, 2, "Ssh:\t" + GoStringSlice(At(job, "/spec/plugins/ssh")) + "\n");
  Line(out, 1, "Scheduler Name:    \t" + Str(job, "/spec/schedulerName") + "\n");
  Line(out, 1, "Tasks:\n");
  const json& tasks = At(job, "/spec/tasks");
  for (const auto& t : tasks.is_array() ? tasks : json::array()) {
    Line(out, 2, "Name:\t" + Str(t, "/name") + "\n");
    Line(out, 2, "Replicas:\t" + std::to_string(Int(t, "/replicas")) + "\n");
    Line(out, 2, "Template:\n");
    Line(out, 3, "Metadata:\n");
    Line(out, 4, "Annotations:\n");
    const json& tm = At(t, "/template/metadata");
    Line(out, 5, "Cri . Cci . Io / Container - Type:          \t" + Annotation(tm, "cri.cci.io/container-type") + "\n");
    Line(out, 5, "Kubernetes . Io / Availablezone:            \t" + Annotation(tm, "kubernetes.io/availablezone") + "\n");
    Line(out, 5, "Network . Alpha . Kubernetes . Io / Network:\t" +
                     Annotation(tm, "network.alpha.kubernetes.io/network") + "\n");
    Line(out, 4, "Creation Timestamp:\t" + GoTimeString(Str(tm, "/creationTimestamp")) + "\n");
    Line(out, 3, "Spec:\n");
    Line(out, 4, "Containers:\n");
    const json& containers = At(t, "/template/spec/containers");
    for (const auto& c : containers.is_array() ? containers : json::array()) {
      Line(out, 5, "Command:\n");
      const json& cmd = At(c, "/command");
      for (const auto& a : cmd.is_array() ? cmd : json::array())
        Line(out, 6, (a.is_string() ? a.get<std::string>() : a.dump()) + "\n");
      Line(out, 5, "Image:\t" + Str(c, "/image") + "\n");
      Line(out, 5, "Name: \t" + Str(c, "/name") + "\n");
      Line(out, 5, "Ports:\n");
      const json& ports = At(c, "/ports");
      for (const auto& p : ports.is_array() ? ports : json::array()) {
        Line(out, 6, "Container Port:\t" + std::to_string(Int(p, "/containerPort")) + "\n");
        Line(out, 6, "Name:          \t" + Str(p, "/name") + "\n");
      }
      const json& res = At(c, "/resources");
      Line(out, 5, "Resources:\n");
      Line(out, 6, "Limits:\n");
      Line(out, 7, "Cpu:   \t" + Quantity(res, "limits", "cpu") + "\n");
      Line(out, 7, "Memory:\t" + Quantity(res, "limits", "memory") + "\n");
      Line(out, 6, "Requests:\n");
      Line(out, 7, "Cpu:   \t" + Quantity(res, "requests", "cpu") + "\n");
      Line(out, 7, "Memory:\t" + Quantity(res, "requests", "memory") + "\n");
      Line(out, 6, "Working Dir:\t" + Str(c, "/workingDir") + "\n");
    }
    Line(out, 4, "Image Pull Secrets:\n");
    const json& secrets = At(t, "/template/spec/imagePullSecrets");
    for (const auto& s : secrets.is_array() ? secrets : json::array())
      Line(out, 5, "Name:     \t" + Str(s, "/name") + "\n");
    Line(out, 4, "Restart Policy:   \t" + Str(t, "/template/spec/restartPolicy") + "\n");
  }
  Line(out, 0, "Status:\n");
  const json& st = At(job, "/status");
  auto count = [&](const char* field, const char* label) {
    int64_t v = Int(st, field);
    if (v > 0) Line(out, 1, std::string(label) + std::to_string(v) + "\n");
  };
  count("/succeeded", "Succeeded:    \t");
  count("/pending", "Pending:      \t");
  count("/running", "Running:      \t");
  count("/failed", "Failed:       \t");
  count("/terminating", "Terminating:  \t");
  count("/unknown", "Unknown:      \t");
  count("/retryCount", "RetryCount:   \t");
  count("/minAvailable", "Min Available:\t");
  count("/version", "Version:      \t");
  Line(out, 1, "State:\n");
  Line(out, 2, "Phase:\t" + Str(st, "/state/phase") + "\n");
  const json& cr = At(st, "/controlledResources");
  if (cr.is_object() && !cr.empty()) {
    Line(out, 1, "Controlled Resources:\n");
    for (auto it = cr.begin(); it != cr.end(); ++it)
      Line(out, 2, it.key() + ": \t" + (it->is_string() ? it->get<std::string>() : it->dump()) + "\n");
  }
  const json& conds = At(st, "/conditions");
  if (conds.is_array() && !conds.empty()) {
    Line(out, 1, "Conditions:\n    Status\tTransitionTime\n");
    for (const auto& c : conds)
      Line(out, 2, Str(c, "/status") + " \t" + GoTimeString(Str(c, "/lastTransitionTime")) + " \n");
  }
}

void PrintEvents(std::ostream& out, const std::vector<json>& events, const core::Clock& clock) {
  if (events.empty()) {
    Line(out, 0, "Events: \t<none>\n");
    return;
  }
  out << Sprintf("%s:\n%-15s\t%-40s\t%-30s\t%-40s\t%s\n", "Events", "Type", "Reason", "Age", "Form", "Message");
  out << Sprintf("%-15s\t%-40s\t%-30s\t%-40s\t%s\n", "-------", "-------", "-------", "-------", "-------");
  for (const auto& e : events) {
    std::string interval;
    int64_t n = Int(e, "/count");
    if (n > 1)
      interval = Age(Str(e, "/lastTimestamp"), clock) + " (x" + std::to_string(n) + " over " +
                 Age(Str(e, "/firstTimestamp"), clock) + ")";
    else
      interval = Age(Str(e, "/firstTimestamp"), clock);
    std::string source = Str(e, "/source/component");
    if (!Str(e, "/source/host").empty()) source += ", " + Str(e, "/source/host");
    std::string msg = Str(e, "/message");
    msg.erase(0, msg.find_first_not_of(" \t\n\r"));
    msg.erase(msg.find_last_not_of(" \t\n\r") + 1);
    out << Sprintf("%-15s\t%-40s\t%-30s\t%-40s\t%s\n", Str(e, "/type").c_str(), Str(e, "/reason").c_str(),
                   interval.c_str(), source.c_str(), msg.c_str());
  }
}

struct NameFlags {
  std::string ns = "default", name, output;
};

void AddNameFlags(CLI::App* app, NameFlags* f) {
  app->add_option("-n,--namespace", f->ns, "the namespace of job")->capture_default_str();
  app->add_option("-N,--name", f->name, "the name of job");
}

void RegisterView(CLI::App* job, Runner& runner) {
  auto f = std::make_shared<NameFlags>();
  auto* app = job->add_subcommand("view", "show job information");
  runner.AddConnectionFlags(app);
  AddNameFlags(app, f.get());
  AddOutputFlag(app, &f->output);
  runner.OnRun(
      app,
      [f] { return f->name.empty() ? "job name (specified by --name or -N) is mandatory to view a particular job" : ""; },
      [f, app](Context& ctx) {
        auto job = ctx.client.Get(JobRes(), f->ns, f->name);
        if (!job.ok()) return Fail(ctx, app, ctx.Explain(job.status(), "get", JobRes(), f->ns, f->name));
        Format fmt = ParseFormat(f->output).value_or(Format::kTable);
        if (fmt == Format::kJson || fmt == Format::kYaml) {
          PrintObject(ctx.out, *job, JobRes(), fmt);
          return int{kExitOk};
        }
        PrintJobInfo(ctx.out, *job);
        // Events named "<job>.<suffix>" in the job's namespace, like vcctl (a failure only warns).
        std::vector<json> mine;
        auto events = ListObjects(ctx, api::Event::Resource(), f->ns);
        if (!events.ok()) {
          ctx.err << "Failed to list events: " << events.status().message() << "\n";
        } else {
          for (auto& e : *events)
            if (Str(e, "/metadata/name").rfind(f->name + ".", 0) == 0) mine.push_back(std::move(e));
        }
        PrintEvents(ctx.out, mine, ctx.clock);
        return int{kExitOk};
      });
}

// --- suspend / resume / delete ----------------------------------------------------------------------------

void RegisterCommandAction(CLI::App* job, Runner& runner, const char* verb, const char* help, std::string_view action) {
  auto f = std::make_shared<NameFlags>();
  auto* app = job->add_subcommand(verb, help);
  runner.AddConnectionFlags(app);
  AddNameFlags(app, f.get());
  std::string usage = std::string("job name is mandatory to ") + verb + " a particular job";
  runner.OnRun(
      app, [f, usage] { return f->name.empty() ? usage : ""; },
      [f, app, action](Context& ctx) {
        auto job = ctx.client.Get(JobRes(), f->ns, f->name);
        if (!job.ok()) return Fail(ctx, app, ctx.Explain(job.status(), "get", JobRes(), f->ns, f->name));
        const auto& cr = api::Command::Resource();
        auto created = ctx.client.Create(cr, f->ns, NewCommand(*job, JobRes(), action, Str(*job, "/metadata/namespace")));
        if (!created.ok()) return Fail(ctx, app, ctx.Explain(created.status(), "create", cr, f->ns));
        return int{kExitOk};
      });
}

void RegisterDelete(CLI::App* job, Runner& runner) {
  auto f = std::make_shared<NameFlags>();
  auto* app = job->add_subcommand("delete", "delete a job");
  runner.AddConnectionFlags(app);
  AddNameFlags(app, f.get());
  runner.OnRun(
      app, [f] { return f->name.empty() ? "job name is mandatory to delete a particular job" : ""; },
      [f, app](Context& ctx) {
        auto s = ctx.client.Delete(JobRes(), f->ns, f->name);
        if (!s.ok()) return Fail(ctx, app, ctx.Explain(s, "delete", JobRes(), f->ns, f->name));
        ctx.out << "delete job " << f->name << " successfully\n";
        return int{kExitOk};
      });
}

// --- run ------------------------------------------------------------------------------------------------

struct RunFlags {
  std::string name, ns = "default", image = "busybox", requests = "cpu=1000m,memory=100Mi",
                    limits = "cpu=1000m,memory=100Mi", scheduler = "volcano", file, output;
  int min = 1, replicas = 1;
  // What-if (docs/reservations.md): ask the scheduler when and where the job would start; create nothing.
  bool test_only = false;
  std::string scheduler_url, scheduler_service = "tephra-system/tephra-scheduler-service:8080";
};

// `job run --test-only`: the scheduler's answer for one job, Slurm's `sbatch --test-only` line in Tephra's words.
int AskTestOnly(Context& ctx, const CLI::App* app, const RunFlags& f, Runner& runner, const json& job) {
  kube::ClientPtr direct;
  std::string path = "/v1/test-only";
  kube::Client* client = &ctx.client;
  if (!f.scheduler_url.empty()) {
    auto c = runner.env().connect(ConnectionFlags{"", f.scheduler_url});
    if (!c.ok()) return Fail(ctx, app, c.status());
    direct = c->client;
    client = direct.get();
  } else {
    // Through the API server's service proxy: needs create on services/proxy in the scheduler's namespace.
    const size_t slash = f.scheduler_service.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == f.scheduler_service.size())
      return Fail(ctx, app, core::InvalidArgumentError("--scheduler-service: want NAMESPACE/NAME:PORT, got \"" +
                                                       f.scheduler_service + "\""));
    path = "/api/v1/namespaces/" + f.scheduler_service.substr(0, slash) + "/services/" +
           f.scheduler_service.substr(slash + 1) + "/proxy/v1/test-only";
  }
  auto r = client->Raw("POST", path, &job);
  if (!r.ok()) {
    return Fail(ctx, app,
                core::Status(r.status().code(), "asking the scheduler (" +
                                                    (f.scheduler_url.empty() ? "service " + f.scheduler_service
                                                                             : f.scheduler_url) +
                                                    "): " + r.status().message()));
  }
  if (f.output == "json") {
    ctx.out << r->dump(2) << "\n";
    return int{kExitOk};
  }
  const std::string who = Str(*r, "/job");
  if (Str(*r, "/kind") == "unknown") {
    ctx.out << "Job " << who << " has no start estimate: " << Str(*r, "/why") << "\n";
    return int{kExitOk};
  }
  std::string nodes;
  const json& list = At(*r, "/nodes");
  if (list.is_array())
    for (const auto& n : list) nodes += (nodes.empty() ? "" : ",") + n.get<std::string>();
  ctx.out << "Job " << who << " to start at " << Str(*r, "/startTime") << " using " << Int(*r, "/pods")
          << " pod(s) on nodes " << nodes << " in queue " << Str(*r, "/queue") << " (" << Str(*r, "/why") << ")\n";
  return int{kExitOk};
}

// vcctl's PopulateResourceListV1: "cpu=1000m,memory=100Mi" -> {"cpu": "1", "memory": "100Mi"}.
core::StatusOr<json> ResourceList(const std::string& spec) {
  json out = json::object();
  if (spec.empty()) return out;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string::npos) end = spec.size();
    std::string stmt = spec.substr(start, end - start);
    size_t eq = stmt.find('=');
    if (eq == std::string::npos || stmt.find('=', eq + 1) != std::string::npos)
      return core::InvalidArgumentError("invalid argument syntax " + stmt + ", expected <resource>=<value>");
    auto q = core::Quantity::Parse(stmt.substr(eq + 1));
    if (!q.ok()) return q.status();
    out[stmt.substr(0, eq)] = q->ToString();
    start = end + 1;
  }
  return out;
}

json JobFromFlags(const RunFlags& f, const json& requests, const json& limits) {
  json container = {{"image", f.image}, {"name", f.name}, {"imagePullPolicy", "IfNotPresent"}, {"resources", json::object()}};
  if (!limits.empty()) container["resources"]["limits"] = limits;
  if (!requests.empty()) container["resources"]["requests"] = requests;
  const auto& r = JobRes();
  return {{"apiVersion", r.ApiVersion()},
          {"kind", std::string(r.kind)},
          {"metadata", {{"name", f.name}, {"namespace", f.ns}}},
          {"spec",
           {{"minAvailable", f.min},
            {"schedulerName", f.scheduler},
            {"tasks",
             json::array({{{"replicas", f.replicas},
                           {"template",
                            {{"metadata", {{"name", f.name}, {"labels", {{"job.volcano.sh", f.name}}}}},
                             {"spec", {{"restartPolicy", "Never"}, {"containers", json::array({container})}}}}}}})}}}};
}

void RegisterRun(CLI::App* job, Runner& runner) {
  auto f = std::make_shared<RunFlags>();
  auto* app = job->add_subcommand("run", "run job by parameters from the command line");
  runner.AddConnectionFlags(app);
  app->add_option("-i,--image", f->image, "the container image of job")->capture_default_str();
  auto* ns_opt = app->add_option("-n,--namespace", f->ns, "the namespace of job (default: the file's, else default)")
                     ->capture_default_str();
  app->add_option("-N,--name", f->name, "the name of job");
  app->add_option("-m,--min", f->min, "the minimal available tasks of job")->capture_default_str();
  app->add_option("-r,--replicas", f->replicas, "the total tasks of job")->capture_default_str();
  app->add_option("-R,--requests", f->requests, "the resource request of the task")->capture_default_str();
  app->add_option("-L,--limits", f->limits, "the resource limit of the task")->capture_default_str();
  app->add_option("-S,--scheduler", f->scheduler, "the scheduler for this job")->capture_default_str();
  app->add_option("-f,--filename", f->file, "a Volcano Job manifest (YAML or JSON; several documents allowed)");
  app->add_option("-o,--output", f->output, "name: print only the created job names; json: --test-only's answer")
      ->check(CLI::IsMember({"name", "json"}));
  app->add_flag("--test-only", f->test_only,
                "Create nothing: ask the scheduler when and on which nodes the job would start if it were "
                "submitted now (Slurm's sbatch --test-only; needs tephra scheduler --reservation-depth > 0 for "
                "the running jobs' ends to be known)");
  app->add_option("--scheduler-url", f->scheduler_url,
                  "With --test-only: the scheduler's metrics address (http://host:port) to ask directly");
  app->add_option("--scheduler-service", f->scheduler_service,
                  "With --test-only: ask through the API server's service proxy, NAMESPACE/NAME:PORT")
      ->capture_default_str();
  runner.OnRun(
      app, [f] { return f->name.empty() && f->file.empty() ? "job name cannot be left blank" : ""; },
      [f, app, ns_opt, &runner](Context& ctx) {
        std::vector<json> jobs;
        if (!f->file.empty()) {
          auto docs = ReadManifests(f->file);
          if (!docs.ok()) return Fail(ctx, app, docs.status());
          for (size_t i = 0; i < docs->size(); ++i) {
            json& d = (*docs)[i];
            const std::string kind = Str(d, "/kind"), av = Str(d, "/apiVersion");
            if (kind != "Job" || av.rfind("batch.volcano.sh/", 0) != 0)
              return Fail(ctx, app,
                          core::InvalidArgumentError(f->file + ": document " + std::to_string(i + 1) +
                                                     ": expected a batch.volcano.sh Job, got " +
                                                     (kind.empty() ? "no kind" : av + " " + kind)));
            if (!d["metadata"].is_object()) d["metadata"] = json::object();
            if (ns_opt->count() > 0 || Str(d, "/metadata/namespace").empty()) d["metadata"]["namespace"] = f->ns;
            jobs.push_back(std::move(d));
          }
        } else {
          auto req = ResourceList(f->requests);
          if (!req.ok()) return Fail(ctx, app, req.status());
          auto lim = ResourceList(f->limits);
          if (!lim.ok()) return Fail(ctx, app, lim.status());
          jobs.push_back(JobFromFlags(*f, *req, *lim));
        }
        for (const auto& j : jobs) {
          if (f->test_only) {
            if (int rc = AskTestOnly(ctx, app, *f, runner, j); rc != kExitOk) return rc;
            continue;
          }
          const std::string ns = Str(j, "/metadata/namespace");
          auto created = ctx.client.Create(JobRes(), ns, j);
          if (!created.ok()) return Fail(ctx, app, ctx.Explain(created.status(), "create", JobRes(), ns));
          if (f->output == "name") ctx.out << Str(*created, "/metadata/name") << "\n";
          else ctx.out << "run job " << Str(*created, "/metadata/name") << " successfully\n";
        }
        return int{kExitOk};
      });
}

// --- why (implementation in why.cc) -----------------------------------------------------------------------

void RegisterWhy(CLI::App* job, Runner& runner) {
  auto f = std::make_shared<NameFlags>();
  auto* app = job->add_subcommand("why", "explain why a job is pending or stuck (its PodGroup's conditions)");
  runner.AddConnectionFlags(app);
  AddNameFlags(app, f.get());
  app->add_option("-o,--output", f->output, "json: machine-readable")->check(CLI::IsMember({"json"}));
  runner.OnRun(
      app, [f] { return f->name.empty() ? "job name (specified by --name or -N) is mandatory" : ""; },
      [f](Context& ctx) { return JobWhy(ctx, f->ns, f->name, f->output); });
}

}  // namespace

void RegisterJob(CLI::App& root, Runner& runner) {
  auto* job = root.add_subcommand("job", "vcctl command line operation job");
  job->require_subcommand(1);
  RegisterRun(job, runner);
  RegisterList(job, runner);
  RegisterView(job, runner);
  RegisterCommandAction(job, runner, "suspend", "abort a job", api::kActionAbortJob);
  RegisterCommandAction(job, runner, "resume", "resume a job", api::kActionResumeJob);
  RegisterDelete(job, runner);
  RegisterJobWait(job, runner);
  RegisterJobLogs(job, runner);
  RegisterWhy(job, runner);
}

}  // namespace tephra::ctl::internal
