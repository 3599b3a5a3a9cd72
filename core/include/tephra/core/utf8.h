// Text that goes to the API server must be valid UTF-8: the JSON encoder refuses anything else (nlohmann throws
// type_error, Go's encoder would substitute), and a byte cut in the middle of a character is the easiest way to
// make invalid text out of valid input. Every message that is cut to a size goes through CutUtf8.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tephra::core {

// True when s is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool IsValidUtf8(std::string_view s);

// s with each ill-formed sequence replaced by U+FFFD.
std::string ValidUtf8(std::string_view s);

// ValidUtf8(s), then cut to at most max_bytes on a character boundary. A cut text ends with "..." when there is
// room for it, so a reader sees that it was cut.
std::string CutUtf8(std::string_view s, size_t max_bytes);

}  // namespace tephra::core
