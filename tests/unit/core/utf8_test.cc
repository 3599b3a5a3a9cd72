#include "tephra/core/utf8.h"

#include <gtest/gtest.h>

namespace tephra::core {
namespace {

std::string Repeat(std::string_view s, int n) {
  std::string o;
  for (int i = 0; i < n; ++i) o += s;
  return o;
}

TEST(Utf8, ValidTextIsKept) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));
  EXPECT_EQ(ValidUtf8("\xC3\xA9"), "\xC3\xA9");
}

TEST(Utf8, IllFormedSequencesAreReplaced) {
  EXPECT_FALSE(IsValidUtf8("\xC3"));              // cut after the lead byte
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_EQ(ValidUtf8("a\xC3"), "a\xEF\xBF\xBD");
  EXPECT_EQ(ValidUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
}

// The reproduction of issue 41: 700 'é' cut at a byte limit used to end in half a character.
TEST(Utf8, CutNeverSplitsACharacter) {
  const std::string flows = Repeat("\xC3\xA9", 700);
  for (size_t limit : {1023u, 1024u, 1025u, 17u, 3u, 1u, 0u}) {
    const std::string cut = CutUtf8(flows, limit);
    EXPECT_LE(cut.size(), limit) << limit;
    EXPECT_TRUE(IsValidUtf8(cut)) << limit;
  }
  EXPECT_EQ(CutUtf8(flows, 1024).size(), 1023u);  // 510 characters and the ellipsis
  EXPECT_EQ(CutUtf8(flows, 1024).substr(1016), "\xC3\xA9\xC3\xA9...");
  EXPECT_EQ(CutUtf8("short", 1024), "short");
  EXPECT_EQ(CutUtf8(Repeat("\xF0\x9F\x98\x80", 10), 6), "\xF0\x9F\x98\x80");
}

}  // namespace
}  // namespace tephra::core
