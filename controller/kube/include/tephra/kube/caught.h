// No exception leaves a thread of a role: the top of each thread and request handler catches, and reports
// here, so a caught failure is visible (tephra_caught_exceptions_total{where}) rather than silent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tephra::kube {

// Logs at error and counts. `where`: "event-recorder", "informer", "http".
void CountException(std::string_view where, std::string_view what);
// The counts so far, by `where`.
std::vector<std::pair<std::string, uint64_t>> CaughtExceptions();

// Objects a LIST or watch passed over because they would not decode (nested too deep), by resource (plural).
void CountSkippedObject(std::string_view resource);
std::vector<std::pair<std::string, uint64_t>> SkippedObjects();

}  // namespace tephra::kube
