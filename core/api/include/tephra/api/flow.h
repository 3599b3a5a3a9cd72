// flow.volcano.sh/v1alpha1: JobFlow and JobTemplate (docs/volcano-behaviour.md, "JobFlow and JobTemplate fields").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/api/batch.h"
#include "tephra/api/codec.h"
#include "tephra/api/meta.h"

namespace tephra::api {

// JobFlow state.phase
inline constexpr std::string_view kFlowPhaseSucceed = "Succeed";
inline constexpr std::string_view kFlowPhaseTerminating = "Terminating";
inline constexpr std::string_view kFlowPhaseFailed = "Failed";
inline constexpr std::string_view kFlowPhaseRunning = "Running";
inline constexpr std::string_view kFlowPhasePending = "Pending";

// JobFlowSpec.jobRetainPolicy
inline constexpr std::string_view kJobRetainPolicyRetain = "retain";
inline constexpr std::string_view kJobRetainPolicyDelete = "delete";

struct HttpGetProbe {
  std::string task_name;
  std::string path;
  int32_t port = 0;
  json http_header;  // v1.HTTPHeader {name, value}, raw
  json extra;
};
Status Decode(const json& j, HttpGetProbe* out);
void Encode(const HttpGetProbe& in, json* j);

struct TcpSocketProbe {
  std::string task_name;
  int32_t port = 0;
  json extra;
};
Status Decode(const json& j, TcpSocketProbe* out);
void Encode(const TcpSocketProbe& in, json* j);

struct TaskStatusProbe {
  std::string task_name;
  std::string phase;
  json extra;
};
Status Decode(const json& j, TaskStatusProbe* out);
void Encode(const TaskStatusProbe& in, json* j);

struct Probe {
  std::vector<HttpGetProbe> http_get_list;
  std::vector<TcpSocketProbe> tcp_socket_list;
  std::vector<TaskStatusProbe> task_status_list;
  json extra;
};
Status Decode(const json& j, Probe* out);
void Encode(const Probe& in, json* j);

struct FlowDependsOn {
  std::vector<std::string> targets;
  std::optional<Probe> probe;
  json extra;
};
Status Decode(const json& j, FlowDependsOn* out);
void Encode(const FlowDependsOn& in, json* j);

struct FlowPatch {
  JobSpec job_spec;  // jobSpec
  json extra;
};
Status Decode(const json& j, FlowPatch* out);
void Encode(const FlowPatch& in, json* j);

struct Flow {
  std::string name;  // required
  std::optional<FlowDependsOn> depends_on;
  std::optional<FlowPatch> patch;
  json extra;
};
Status Decode(const json& j, Flow* out);
void Encode(const Flow& in, json* j);

struct JobFlowSpec {
  std::vector<Flow> flows;
  std::string job_retain_policy;
  json extra;
};
Status Decode(const json& j, JobFlowSpec* out);
void Encode(const JobFlowSpec& in, json* j);

struct JobRunningHistory {
  std::string start_timestamp;
  std::string end_timestamp;
  std::string state;
  json extra;
};
Status Decode(const json& j, JobRunningHistory* out);
void Encode(const JobRunningHistory& in, json* j);

struct JobStatusInfo {
  std::string name;
  std::string state;
  std::string start_timestamp;
  std::string end_timestamp;
  int32_t restart_count = 0;
  std::vector<JobRunningHistory> running_histories;
  json extra;
};
Status Decode(const json& j, JobStatusInfo* out);
void Encode(const JobStatusInfo& in, json* j);

struct FlowCondition {
  std::string phase;
  std::string create_time;
  std::string running_duration;
  std::map<std::string, TaskState> task_status_count;
  json extra;
};
Status Decode(const json& j, FlowCondition* out);
void Encode(const FlowCondition& in, json* j);

struct FlowState {
  std::string phase;
  json extra;
};
Status Decode(const json& j, FlowState* out);
void Encode(const FlowState& in, json* j);

struct JobFlowStatus {
  std::vector<std::string> pending_jobs;
  std::vector<std::string> running_jobs;
  std::vector<std::string> failed_jobs;
  std::vector<std::string> completed_jobs;
  std::vector<std::string> terminated_jobs;
  std::vector<std::string> un_know_jobs;  // "unKnowJobs" (sic, Volcano's spelling)
  std::vector<JobStatusInfo> job_status_list;
  std::map<std::string, FlowCondition> conditions;
  FlowState state;
  json extra;
};
Status Decode(const json& j, JobFlowStatus* out);
void Encode(const JobFlowStatus& in, json* j);

struct JobFlow {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  JobFlowSpec spec;
  JobFlowStatus status;
  json extra;
};
Status Decode(const json& j, JobFlow* out);
void Encode(const JobFlow& in, json* j);

struct JobTemplateStatus {
  std::vector<std::string> job_depends_on_list;
  json extra;
};
Status Decode(const json& j, JobTemplateStatus* out);
void Encode(const JobTemplateStatus& in, json* j);

struct JobTemplate {
  static const ResourceInfo& Resource();
  std::string api_version, kind;
  ObjectMeta metadata;
  JobSpec spec;
  JobTemplateStatus status;
  json extra;
};
Status Decode(const json& j, JobTemplate* out);
void Encode(const JobTemplate& in, json* j);

}  // namespace tephra::api
