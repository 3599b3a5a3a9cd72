// Volcano's volcano-scheduler.conf (YAML) -> the core's SchedulerConf, and a poller that reloads the file
// when it changes. yaml-cpp is confined to src/conf_yaml.cc; nothing here exposes a YAML type.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tephra/core/status.h"
#include "tephra/sched/config.h"

namespace tephra::scheduler {

// Parses the YAML text of a Volcano scheduler configuration:
//   actions: "enqueue, allocate, backfill"          (comma-separated string, as Volcano reads it)
//   tiers: [{plugins: [{name, enableXxx..., arguments: {k: v}}]}]
//   configurations: [{name: <action>, arguments: {k: v}}]
// Loaded the way Volcano loads it (docs/volcano-conformance.md, "Scheduler configuration"): unknown keys at
// any level are ignored with a warning in *warnings naming them (a typo such as `enablePreemtable` shows in
// the log); a value of the wrong type (a switch that is not a boolean, tiers that are not a list) is an
// error. Argument values are kept as strings: scalars as written, nested maps and lists as flow YAML.
// `source` names the file in messages ("volcano-scheduler.conf: tiers[1].plugins[3].enableJobOrder: not a
// boolean"). The result is NOT validated against the plugin registry: LoadSchedulerConf does that.
core::StatusOr<sched::SchedulerConf> ParseSchedulerConf(const std::string& yaml_text,
                                                        const std::string& source = "scheduler conf",
                                                        std::vector<std::string>* warnings = nullptr);

// Parse + the core's validation (unknown actions/plugins, duplicates, proportion with drf hierarchy).
// Warnings (known but unimplemented Volcano actions/plugins) go to *warnings.
core::StatusOr<sched::SchedulerConf> LoadSchedulerConf(const std::string& yaml_text, const std::string& source,
                                                       std::vector<std::string>* warnings = nullptr);

// Reads a file and LoadSchedulerConf()s it.
core::StatusOr<sched::SchedulerConf> LoadSchedulerConfFile(const std::string& path,
                                                           std::vector<std::string>* warnings = nullptr);

// Polls a file's mtime/size; Changed() is true once per observed change (and on the first call when the
// file exists). Why polling rather than inotify: a ConfigMap volume updates by swapping a symlink, which
// inotify on the file misses; stat() through the symlink sees it.
class FileChangePoller {
 public:
  explicit FileChangePoller(std::string path) : path_(std::move(path)) {}
  bool Changed();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int64_t mtime_ns_ = -1;
  int64_t size_ = -1;
  uint64_t inode_ = 0;
};

}  // namespace tephra::scheduler
