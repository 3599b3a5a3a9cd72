// Regular expressions with Go's regexp semantics, for the places where Volcano evaluates a user's pattern
// with Go: HyperNode `regexMatch` members (docs/volcano-conformance.md). RE2 implements that syntax and its
// guarantees (linear time, bounded memory, no backreferences), so a pattern means on Tephra what it means
// on Volcano, `(?i)` and unanchored matching included, and no pattern can hang the scheduler or the webhook.
// RE2 is used only in pattern/src/pattern.cc; this header exposes no RE2 type.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "tephra/core/status.h"

namespace tephra::pattern {

class Pattern {
 public:
  // InvalidArgument with RE2's explanation ("missing ): a(") for a pattern Go's regexp rejects too.
  static core::StatusOr<Pattern> Compile(std::string_view expr);

  // Go's MatchString: true when the pattern matches anywhere in `text` (anchor with ^ and $ to match all).
  bool Find(std::string_view text) const;
  const std::string& expr() const { return expr_; }

 private:
  struct Impl;
  Pattern(std::string expr, std::shared_ptr<const Impl> impl) : expr_(std::move(expr)), impl_(std::move(impl)) {}
  std::string expr_;
  std::shared_ptr<const Impl> impl_;  // shared: copies are cheap and the compiled program is immutable
};

}  // namespace tephra::pattern
