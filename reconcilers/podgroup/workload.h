// The two workload kinds whose scale-to-zero removes their pods' automatic PodGroup (docs/controllers.md):
// apps/v1 ReplicaSet and StatefulSet, as tephra/api/apps.h decodes them (metadata, spec.replicas).
#pragma once

#include "tephra/api/apps.h"

namespace tephra::reconcilers::podgroup {

using ScalableWorkload = api::Workload;
using ReplicaSet = api::ReplicaSet;
using StatefulSet = api::StatefulSet;

}  // namespace tephra::reconcilers::podgroup
