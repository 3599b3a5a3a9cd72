#include "tephra/api/topology.h"

#include "codec_macros.h"

namespace tephra::api {

#define EM_FIELDS(F, A) F("name", name)
TEPHRA_API_CODEC(ExactMatch, EM_FIELDS)
#define RM_FIELDS(F, A) F("pattern", pattern)
TEPHRA_API_CODEC(RegexMatch, RM_FIELDS)
#define MSEL_FIELDS(F, A) F("exactMatch", exact_match) F("regexMatch", regex_match) F("labelMatch", label_match)
TEPHRA_API_CODEC(MemberSelector, MSEL_FIELDS)
#define MEMBER_FIELDS(F, A) F("type", type) F("selector", selector)
TEPHRA_API_CODEC(MemberSpec, MEMBER_FIELDS)
#define HNSPEC_FIELDS(F, A) F("tier", tier) F("tierName", tier_name) F("members", members)
TEPHRA_API_CODEC(HyperNodeSpec, HNSPEC_FIELDS)
#define MCOND_FIELDS(F, A)                                                                                  \
  A("type", type) A("status", status) F("observedGeneration", observed_generation)                      \
      A("lastTransitionTime", last_transition_time) A("reason", reason) A("message", message)
TEPHRA_API_CODEC(MetaCondition, MCOND_FIELDS)
#define HNSTATUS_FIELDS(F, A) F("conditions", conditions) F("nodeCount", node_count)
TEPHRA_API_CODEC(HyperNodeStatus, HNSTATUS_FIELDS)
#define HN_FIELDS(F, A) F("metadata", metadata) F("spec", spec) F("status", status)
TEPHRA_API_KIND(HyperNode, HN_FIELDS, "topology.volcano.sh", "v1alpha1", "hypernodes", false)

}  // namespace tephra::api
