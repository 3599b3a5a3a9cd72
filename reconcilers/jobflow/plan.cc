#include "jobflow/plan.h"

#include <algorithm>

#include "tephra/api/labels.h"

namespace tephra::reconcilers::jobflow {

std::string JobName(const std::string& jobflow, const std::string& flow) { return jobflow + "-" + flow; }

api::Job BuildJob(const api::JobFlow& flow, const api::JobTemplate& tmpl, const std::string& flow_name) {
  api::Job job;
  job.api_version = api::Job::Resource().ApiVersion();
  job.kind = std::string(api::Job::Resource().kind);
  job.metadata.name = JobName(flow.metadata.name, flow_name);
  job.metadata.namespace_ = flow.metadata.namespace_;
  const std::string by_template = flow.metadata.namespace_ + "." + flow_name;
  const std::string by_flow = flow.metadata.namespace_ + "." + flow.metadata.name;
  for (auto* m : {&job.metadata.labels, &job.metadata.annotations}) {
    (*m)[std::string(api::kCreatedByJobTemplateKey)] = by_template;
    (*m)[std::string(api::kCreatedByJobFlowKey)] = by_flow;
  }
  api::OwnerReference r;
  r.api_version = api::JobFlow::Resource().ApiVersion();
  r.kind = std::string(api::JobFlow::Resource().kind);
  r.name = flow.metadata.name;
  r.uid = flow.metadata.uid;
  r.controller = true;
  r.block_owner_deletion = true;
  job.metadata.owner_references.push_back(std::move(r));
  job.spec = tmpl.spec;
  return job;
}

std::string NextPhase(const std::string& current, const api::JobFlowStatus& s, size_t flows) {
  if (current == api::kFlowPhaseSucceed || current == api::kFlowPhaseFailed || current == api::kFlowPhaseTerminating)
    return current;
  if (!s.failed_jobs.empty() || !s.terminated_jobs.empty()) return std::string(api::kFlowPhaseFailed);
  if (flows > 0 && s.completed_jobs.size() == flows) return std::string(api::kFlowPhaseSucceed);
  if (!s.running_jobs.empty() || !s.completed_jobs.empty()) return std::string(api::kFlowPhaseRunning);
  return std::string(api::kFlowPhasePending);
}

std::vector<api::JobRunningHistory> NextRunningHistories(std::vector<api::JobRunningHistory> hist,
                                                         const api::Job& job, const std::string& now) {
  const std::string& phase = job.status.state.phase;
  if (phase.empty()) return hist;  // no phase yet: nothing to record
  if (!hist.empty() && hist.back().state == phase) return hist;
  const std::string& since = job.status.state.last_transition_time.empty() ? now : job.status.state.last_transition_time;
  if (!hist.empty()) hist.back().end_timestamp = since;
  api::JobRunningHistory h;
  h.start_timestamp = since;
  h.state = phase;
  hist.push_back(std::move(h));
  return hist;
}

Actions Plan(const Observed& obs) {
  Actions a;
  const api::JobFlow& jf = obs.flow;
  auto phase_of = [&](const std::string& job) -> std::string {
    auto it = obs.jobs.find(job);
    return it == obs.jobs.end() ? std::string() : it->second.status.state.phase;
  };
  const bool deleting = !jf.metadata.deletion_timestamp.empty();

  // 1. Jobs whose dependencies are met.
  if (!deleting && jf.status.state.phase != api::kFlowPhaseSucceed && jf.status.state.phase != api::kFlowPhaseFailed) {
    for (const auto& f : jf.spec.flows) {
      const std::string name = JobName(jf.metadata.name, f.name);
      if (obs.jobs.count(name)) continue;
      bool ready = true;
      if (f.depends_on)
        for (const auto& t : f.depends_on->targets)
          if (phase_of(JobName(jf.metadata.name, t)) != api::kJobPhaseCompleted) ready = false;
      if (!ready) continue;
      auto tmpl = obs.templates.find(f.name);
      if (tmpl == obs.templates.end()) {
        a.missing_templates.push_back(f.name);
        continue;
      }
      a.create_jobs.push_back(BuildJob(jf, tmpl->second, f.name));
    }
  }

  // 2. Status, in spec order (deterministic).
  const std::string now = core::FormatRfc3339(obs.now);
  api::JobFlowStatus st;
  st.extra = jf.status.extra;
  for (const auto& f : jf.spec.flows) {
    const std::string name = JobName(jf.metadata.name, f.name);
    auto it = obs.jobs.find(name);
    if (it == obs.jobs.end()) continue;
    const api::Job& job = it->second;
    const std::string& p = job.status.state.phase;
    if (p == api::kJobPhasePending) st.pending_jobs.push_back(name);
    else if (p == api::kJobPhaseRunning) st.running_jobs.push_back(name);
    else if (p == api::kJobPhaseFailed) st.failed_jobs.push_back(name);
    else if (p == api::kJobPhaseCompleted) st.completed_jobs.push_back(name);
    else if (p == api::kJobPhaseTerminated) st.terminated_jobs.push_back(name);
    else st.un_know_jobs.push_back(name);
    api::JobStatusInfo info;
    info.name = name;
    info.state = p;
    info.start_timestamp = job.metadata.creation_timestamp;
    if (p == api::kJobPhaseCompleted || p == api::kJobPhaseFailed || p == api::kJobPhaseTerminated)
      info.end_timestamp = job.status.state.last_transition_time;
    info.restart_count = job.status.retry_count;
    std::vector<api::JobRunningHistory> previous;
    for (const auto& old : jf.status.job_status_list)
      if (old.name == name) previous = old.running_histories;
    info.running_histories = NextRunningHistories(std::move(previous), job, now);
    st.job_status_list.push_back(std::move(info));
    api::FlowCondition c;
    c.phase = p;
    c.create_time = job.metadata.creation_timestamp;
    c.running_duration = job.status.running_duration;
    c.task_status_count = job.status.task_status_count;
    st.conditions[name] = std::move(c);
  }
  st.state = jf.status.state;
  st.state.phase = NextPhase(jf.status.state.phase, st, jf.spec.flows.size());
  a.phase = st.state.phase;
  if (api::ToJson(st) != api::ToJson(jf.status)) a.update_status = std::move(st);

  // 3. Retention.
  if (a.phase == api::kFlowPhaseSucceed && jf.spec.job_retain_policy == api::kJobRetainPolicyDelete)
    for (const auto& [name, job] : obs.jobs)
      if (job.metadata.deletion_timestamp.empty()) a.delete_jobs.push_back(name);
  return a;
}

std::optional<std::vector<std::string>> PlanTemplate(const api::JobTemplate& tmpl, std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names == tmpl.status.job_depends_on_list) return std::nullopt;
  return names;
}

}  // namespace tephra::reconcilers::jobflow
