// YAML <-> JSON for manifests given on the command line (`tephra ctl ... -f FILE`, `-o yaml`).
// yaml-cpp stays private to controller/kube/src/yaml/; this header exposes JSON only.
//
// Scalars resolve like kubectl's YAML decoder (YAML 1.1 as implemented by sigs.k8s.io/yaml): plain
// true/false/yes/no/on/off are booleans, null/~/empty are null, integers and floats are numbers; quoted
// scalars are always strings. JSON input is YAML, so it is accepted too.
#pragma once

#include <string>
#include <vector>

#include "tephra/api/codec.h"
#include "tephra/core/status.h"

namespace tephra::kube {

// Every non-empty document of a multi-document stream ("---" separated), in order. Errors
// (kInvalidArgument) name the source and the document: "job.yaml: document 2: ... (line 7, column 3)".
core::StatusOr<std::vector<api::json>> YamlDocumentsToJson(const std::string& text, const std::string& source_name);

// Block-style YAML of one JSON value, ending with a newline. Strings that would read back as another type
// ("1", "true", "") are quoted, so YamlDocumentsToJson(JsonToYaml(x)) == x.
std::string JsonToYaml(const api::json& value);

}  // namespace tephra::kube
