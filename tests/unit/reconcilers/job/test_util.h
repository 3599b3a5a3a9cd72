// Builders and a tiny simulated world for plan tests: Apply() executes Actions the way the executor would
// (creates get a uid and creationTimestamp, deletes remove the object, status replaces status).
#pragma once

#include <string>
#include <vector>

#include "plan.h"
#include "tephra/api/batch.h"
#include "tephra/api/labels.h"

namespace tephra::reconcilers::job::testing {

// RSA generation is slow and random; tests get a fixed fake pair.
class FakeKeyGenerator final : public kube::KeyGenerator {
 public:
  core::StatusOr<kube::SshKeyPair> GenerateRsa(int bits) override {
    ++calls;
    return kube::SshKeyPair{"-----BEGIN RSA PRIVATE KEY-----\nFAKE\n-----END RSA PRIVATE KEY-----\n",
                            "ssh-rsa AAAAFAKE\n"};
  }
  int calls = 0;
};

api::TaskSpec Task(const std::string& name, int replicas, std::optional<int> min_available = std::nullopt);
// A job with every admission default set (api::MutateJob), as the mutating webhook stores it.
api::Job MakeJob(const std::string& name, std::vector<api::TaskSpec> tasks, int min_available = -1);
api::LifecyclePolicy Policy(const std::string& event, const std::string& action, const std::string& timeout = "");
api::LifecyclePolicy ExitCodePolicy(int code, const std::string& action);

// A pod as the controller would have created it for the job's current version.
api::Pod MakePod(const api::Job& job, const std::string& task, int index, const std::string& phase);
void SetExitCode(api::Pod* pod, int code, const std::string& finished_at = "");
api::PodGroup MakePodGroup(const api::Job& job, const std::string& phase);

constexpr const char* kNow = "2026-11-22T10:00:00Z";
core::Clock::WallTime Time(const std::string& rfc3339);

struct World {
  Observed obs;
  FakeKeyGenerator keys;
  int uid_counter = 0;

  explicit World(api::Job job);
  // Executes actions (pod creates land as Pending); returns false if a delete_job happened.
  void Apply(const Actions& a);
  Actions Plan() {
    obs.key_generator = &keys;
    return job::Plan(obs);
  }
  // Plan + Apply until the plan is Empty (at most n rounds); returns rounds used, or -1 if not converged.
  int Converge(int n = 10);
  api::Pod* FindPod(const std::string& name);
  void SetAllPods(const std::string& phase);
  void SetPodGroupPhase(const std::string& phase);
};

}  // namespace tephra::reconcilers::job::testing
