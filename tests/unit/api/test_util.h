// Helpers shared by the api unit tests.
#pragma once

#include <string>

#include "tephra/api/codec.h"

namespace tephra::api::testing {

// Reads tests/testdata/api/<name> and parses it; aborts the test on failure.
json LoadTestdata(const std::string& name);
// Parses a JSON literal written in a test.
json J(const char* text);

}  // namespace tephra::api::testing
