// Structured logging: a message plus key=value fields, written as logfmt (default) or JSON lines to
// stderr through spdlog (kept out of this header).
//
//   TLOG_INFO("pod bound", {{"pod", key}, {"node", node}});
//   log::Info("pod bound").Kv("pod", key).Kv("node", node);   // emitted when the temporary dies
//
// logfmt:  ts=2026-11-22T09:10:55.123Z level=info msg="pod bound" pod=default/a node=n1
// json:    {"ts":"2026-11-22T09:10:55.123Z","level":"info","msg":"pod bound","pod":"default/a","node":"n1"}
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "tephra/core/status.h"

namespace tephra::kube::log {

enum class Level { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };
enum class Format { kLogfmt, kJson };

// "trace|debug|info|warn|error|off" (also "warning"); kInvalidArgument otherwise.
core::StatusOr<Level> ParseLevel(std::string_view s);
// A level from a klog verbosity ("0".."3" info, "4" debug, "5" and up trace) or a level name (ParseLevel).
core::StatusOr<Level> LevelFromFlag(std::string_view s);
const char* LevelName(Level l);
// Configures the process logger; `component` (e.g. "controller") is added to every line when non-empty.
core::Status Init(std::string_view level, Format format = Format::kLogfmt, std::string component = "");
void SetLevel(Level l);
Level GetLevel();
namespace detail {
extern std::atomic<int> g_level;  // defined in log.cc; a relaxed load keeps disabled levels nearly free
}
inline bool Enabled(Level l) { return static_cast<int>(l) >= detail::g_level.load(std::memory_order_relaxed); }

struct Field {
  std::string key;
  std::string value;
  bool quoted_in_json = true;  // numbers and bools are written bare in JSON
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v ? v : "") {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), quoted_in_json(false) {}
  template <typename T>
    requires std::is_arithmetic_v<T>
  Field(std::string_view k, T v) : key(k), value(std::to_string(v)), quoted_in_json(false) {}
  Field(std::string_view k, const core::Status& s) : key(k), value(s.ToString()) {}
};

void Log(Level level, std::string_view msg, std::initializer_list<Field> fields = {});
void LogFields(Level level, std::string_view msg, const std::vector<Field>& fields);

// Renders one line without the timestamp (exposed for tests).
std::string FormatLine(Format format, std::string_view ts, Level level, std::string_view msg,
                       const std::vector<Field>& fields);

// Redirects output (tests); nullptr restores stderr.
void SetSinkForTest(std::function<void(const std::string& line)> sink);

class Entry {
 public:
  Entry(Level level, std::string_view msg) : level_(level), enabled_(Enabled(level)) {
    if (enabled_) msg_ = msg;
  }
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  ~Entry() {
    if (enabled_) LogFields(level_, msg_, fields_);
  }
  template <typename V>
  Entry& Kv(std::string_view key, V&& value) & {
    if (enabled_) fields_.emplace_back(key, std::forward<V>(value));
    return *this;
  }
  template <typename V>
  Entry&& Kv(std::string_view key, V&& value) && {
    if (enabled_) fields_.emplace_back(key, std::forward<V>(value));
    return std::move(*this);
  }

 private:
  Level level_;
  bool enabled_;
  std::string msg_;
  std::vector<Field> fields_;
};

inline Entry Trace(std::string_view msg) { return Entry(Level::kTrace, msg); }
inline Entry Debug(std::string_view msg) { return Entry(Level::kDebug, msg); }
inline Entry Info(std::string_view msg) { return Entry(Level::kInfo, msg); }
inline Entry Warn(std::string_view msg) { return Entry(Level::kWarn, msg); }
inline Entry Error(std::string_view msg) { return Entry(Level::kError, msg); }

}  // namespace tephra::kube::log

// The level check happens before the fields are built.
#define TLOG_AT_(lvl, msg, ...)                                      \
  do {                                                               \
    if (::tephra::kube::log::Enabled(lvl))                           \
      ::tephra::kube::log::Log(lvl, msg __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)
#define TLOG_TRACE(msg, ...) TLOG_AT_(::tephra::kube::log::Level::kTrace, msg __VA_OPT__(, ) __VA_ARGS__)
#define TLOG_DEBUG(msg, ...) TLOG_AT_(::tephra::kube::log::Level::kDebug, msg __VA_OPT__(, ) __VA_ARGS__)
#define TLOG_INFO(msg, ...) TLOG_AT_(::tephra::kube::log::Level::kInfo, msg __VA_OPT__(, ) __VA_ARGS__)
#define TLOG_WARN(msg, ...) TLOG_AT_(::tephra::kube::log::Level::kWarn, msg __VA_OPT__(, ) __VA_ARGS__)
#define TLOG_ERROR(msg, ...) TLOG_AT_(::tephra::kube::log::Level::kError, msg __VA_OPT__(, ) __VA_ARGS__)
