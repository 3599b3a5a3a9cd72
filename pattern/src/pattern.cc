// The one RE2 user (pattern.h).
#include "tephra/pattern/pattern.h"

#include <re2/re2.h>

namespace tephra::pattern {

struct Pattern::Impl {
  explicit Impl(std::string_view expr) : re(expr, Options()) {}
  static RE2::Options Options() {
    RE2::Options o;
    o.set_log_errors(false);  // the error is returned to the caller, not printed
    return o;
  }
  RE2 re;
};

namespace {
// Go's regexp/syntax refuses groups nested deeper than 1,000 ("expression nests too deeply"); RE2 has no such
// limit, so the parser's rule is repeated here: a pattern Volcano refuses is refused here too.
bool NestsTooDeeply(std::string_view expr) {
  int depth = 0;
  bool in_class = false;
  for (size_t i = 0; i < expr.size(); ++i) {
    char c = expr[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      if (c == ']') in_class = false;
    } else if (c == '[') {
      in_class = true;
      if (i + 1 < expr.size() && expr[i + 1] == ']') ++i;  // "[]...]": a leading ] is literal
    } else if (c == '(') {
      if (++depth > 1000) return true;
    } else if (c == ')') {
      --depth;
    }
  }
  return false;
}
}  // namespace

core::StatusOr<Pattern> Pattern::Compile(std::string_view expr) {
  if (NestsTooDeeply(expr)) return core::InvalidArgumentError("expression nests too deeply");
  auto impl = std::make_shared<Impl>(expr);
  if (!impl->re.ok()) return core::InvalidArgumentError(impl->re.error());
  return Pattern(std::string(expr), std::move(impl));
}

bool Pattern::Find(std::string_view text) const { return RE2::PartialMatch(text, impl_->re); }

}  // namespace tephra::pattern
