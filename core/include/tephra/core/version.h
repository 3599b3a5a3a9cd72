#pragma once
#include <string_view>

namespace tephra::core {
std::string_view Version();    // semantic version of this build ("0.1.0")
std::string_view GitCommit();  // short commit it was built from, "-dirty" if the tree had changes
}  // namespace tephra::core
