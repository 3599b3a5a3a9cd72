// Shared by the command-group files of tephra_ctl (not installed).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tephra/api/codec.h"
#include "tephra/ctl/context.h"
#include "tephra/ctl/ctl.h"
#include "tephra/ctl/output.h"

namespace tephra::ctl::internal {

using api::json;

// Owns what the CLI11 callbacks need: the injected Env, the connection flags every leaf command carries, and
// the exit code of the command that ran.
class Runner {
 public:
  explicit Runner(const Env& env) : env_(env) {}
  const Env& env() const { return env_; }
  int exit_code() const { return exit_code_; }

  // Adds -k/--kubeconfig and -s/--master (vcctl's common flags) to a leaf command.
  void AddConnectionFlags(CLI::App* app);

  // The leaf's action. `check` runs first, before connecting, and returns a usage error ("" = fine): printed
  // as vcctl's "Failed to <command>: <message>" with exit 2. Then the client is created and `run` called; its
  // return value is the exit code.
  void OnRun(CLI::App* app, std::function<std::string()> check, std::function<int(Context&)> run);
  void OnRun(CLI::App* app, std::function<int(Context&)> run) { OnRun(app, nullptr, std::move(run)); }

 private:
  const Env& env_;
  ConnectionFlags conn_;
  int exit_code_ = 0;
};

// vcctl's error line, "Failed to list job: <message>", on the error stream; returns kExitError.
int Fail(Context& ctx, const CLI::App* app, const core::Status& s);
std::string CommandPath(const CLI::App* app);  // "list job" (leaf first, like vcctl)

// Adds -o/--output (json|yaml|wide) to a read command.
void AddOutputFlag(CLI::App* app, std::string* out);

// JSON field access that never throws: "" / 0 when absent or of another type.
std::string Str(const json& j, const char* pointer);
int64_t Int(const json& j, const char* pointer);
const json& At(const json& j, const char* pointer);  // null when absent
// A string value of a JSON object by key (label and annotation keys contain '/', which pointers split).
std::string MapValue(const json& map, std::string_view key);

// Lists every object of a resource (all pages); errors explained for a person.
core::StatusOr<std::vector<json>> ListObjects(Context& ctx, const api::ResourceInfo& r, const std::string& ns,
                                              const std::string& label_selector = "");
// Reads a manifest file (YAML or JSON, several documents); errors name the file and document.
core::StatusOr<std::vector<json>> ReadManifests(const std::string& path);

// metav1.NewControllerRef(obj, kind) as JSON.
json ControllerRef(const json& obj, const api::ResourceInfo& r);
// A bus.volcano.sh Command for `target` (vcctl's CreateJobCommand / createQueueCommand): generateName
// "<target>-<action lower-case>-", owned by and targeting the object.
json NewCommand(const json& target, const api::ResourceInfo& r, std::string_view action, const std::string& ns);

void RegisterJob(CLI::App& root, Runner& runner);
void RegisterQueue(CLI::App& root, Runner& runner);
void RegisterJobFlow(CLI::App& root, Runner& runner);
void RegisterJobTemplate(CLI::App& root, Runner& runner);
void RegisterPod(CLI::App& root, Runner& runner);
void RegisterVersion(CLI::App& root, Runner& runner);

// Pieces of `job` in their own files.
void RegisterJobWait(CLI::App* job, Runner& runner);
void RegisterJobLogs(CLI::App* job, Runner& runner);

}  // namespace tephra::ctl::internal
