#include "test_util.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tephra::api::testing {

json LoadTestdata(const std::string& name) {
  std::ifstream in(std::string(TEPHRA_API_TESTDATA) + "/" + name);
  EXPECT_TRUE(in.good()) << "missing testdata " << name;
  std::stringstream ss;
  ss << in.rdbuf();
  StatusOr<json> j = ParseJson(ss.str());
  EXPECT_TRUE(j.ok()) << name << ": " << j.status();
  return j.ok() ? *j : json();
}

json J(const char* text) {
  StatusOr<json> j = ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status() << " in " << text;
  return j.ok() ? *j : json();
}

}  // namespace tephra::api::testing
