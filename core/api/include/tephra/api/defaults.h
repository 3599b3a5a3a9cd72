// Admission defaulting (docs/volcano-behaviour.md, "Admission defaults") as pure functions.
//
// Each Mutate* edits the object in place. The webhook turns the change into an RFC 6902 patch with
// JsonPatchDiff(ToJson(before), ToJson(after)).
#pragma once

#include <string>
#include <vector>

#include "tephra/api/batch.h"
#include "tephra/api/codec.h"
#include "tephra/api/lookup.h"
#include "tephra/api/scheduling.h"

namespace tephra::api {

struct JobDefaultsConfig {
  // --scheduler-name values; the first one is the default schedulerName.
  std::vector<std::string> scheduler_names = {"volcano"};
  std::string default_queue = "default";
};

// Job: queue, schedulerName, maxRetry, task names/minAvailable/maxRetry/dnsPolicy, job minAvailable,
// implied plugins (svc for tensorflow/mpi/pytorch/ray, ssh for mpi).
void MutateJob(Job* job, const JobDefaultsConfig& config);
// Queue: reclaimable -> true, weight -> 1, hierarchy annotations rooted at "root".
void MutateQueue(Queue* queue);
// PodGroup: queue "default" (or empty) + namespace annotation scheduling.volcano.sh/queue-name -> that queue.
void MutatePodGroup(PodGroup* pg, const ClusterLookup& lookup, const std::string& default_queue = "default");

// RFC 6902 operations turning `before` into `after`: objects are diffed key by key (add / remove /
// replace), arrays and scalars are replaced whole. Keys are escaped per RFC 6901 (~0, ~1).
json JsonPatchDiff(const json& before, const json& after);
// The same, but arrays of equal length are diffed element by element, so a change to one field of one
// element patches that field only; object members are set with "add" (which works whether or not the target
// has the member) and array elements with "replace". For admission patches, which the API server applies to
// the object as the user wrote it: only what the mutation changed is touched.
json JsonPatchDiffElementwise(const json& before, const json& after);
// Applies add/remove/replace operations (the subset JsonPatchDiff emits, plus array "-" append).
StatusOr<json> ApplyJsonPatch(const json& doc, const json& patch);

}  // namespace tephra::api
