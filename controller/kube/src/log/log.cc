#include "tephra/kube/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <map>

#include "tephra/core/thread_annotations.h"
#include "tephra/kube/caught.h"

namespace tephra::kube::log {
namespace detail {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
}

namespace {

struct State {
  core::Mutex mu;
  Format format TEPHRA_GUARDED_BY(mu) = Format::kLogfmt;
  std::string component TEPHRA_GUARDED_BY(mu);
  std::function<void(const std::string&)> sink TEPHRA_GUARDED_BY(mu);
  std::shared_ptr<spdlog::logger> logger TEPHRA_GUARDED_BY(mu);
};

State& S() {
  static State* s = new State();  // never destroyed: logging may happen during static destruction
  return *s;
}

std::shared_ptr<spdlog::logger> Logger(State& s) TEPHRA_REQUIRES(s.mu) {
  if (!s.logger) {
    // Lines are fully formatted here; spdlog only provides a thread-safe, flushed stderr sink.
    s.logger = std::make_shared<spdlog::logger>("tephra", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    s.logger->set_pattern("%v");
    s.logger->set_level(spdlog::level::trace);
    s.logger->flush_on(spdlog::level::trace);
  }
  return s.logger;
}

}  // namespace

const char* LevelName(Level l) {
  switch (l) {
    case Level::kTrace: return "trace";
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
    case Level::kOff: return "off";
  }
  return "info";
}

namespace {

std::string Now() {
  auto t = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

void AppendJsonString(std::string* o, std::string_view v);

// logfmt: bare if the value has no space, quote, '=' or control character; otherwise quoted with escapes.
void AppendLogfmtValue(std::string* o, std::string_view v) {
  bool needs = v.empty();
  for (unsigned char c : v) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) {
      needs = true;
      break;
    }
  }
  if (!needs) {
    o->append(v);
    return;
  }
  // A quoted logfmt value uses JSON string escaping.
  AppendJsonString(o, v);
}

void AppendJsonString(std::string* o, std::string_view v) {
  o->push_back('"');
  for (unsigned char c : v) {
    switch (c) {
      case '"': o->append("\\\""); break;
      case '\\': o->append("\\\\"); break;
      case '\n': o->append("\\n"); break;
      case '\r': o->append("\\r"); break;
      case '\t': o->append("\\t"); break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o->append(b);
        } else {
          o->push_back(static_cast<char>(c));
        }
    }
  }
  o->push_back('"');
}

}  // namespace

core::StatusOr<Level> LevelFromFlag(std::string_view s) {
  // klog's verbosity: 0-3 is what Kubernetes components log by default, 4 adds debug detail, 5 and up trace.
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos) {
    if (s.size() > 3) return core::InvalidArgumentError("verbosity \"" + std::string(s) + "\" is out of range");
    const int v = std::stoi(std::string(s));
    return v >= 5 ? Level::kTrace : v == 4 ? Level::kDebug : Level::kInfo;
  }
  if (s.empty()) return core::InvalidArgumentError("want a klog verbosity (0-9) or a level (trace|debug|info|warn|error)");
  return ParseLevel(s);
}

core::StatusOr<Level> ParseLevel(std::string_view s) {
  if (s == "trace") return Level::kTrace;
  if (s == "debug") return Level::kDebug;
  if (s == "info" || s.empty()) return Level::kInfo;
  if (s == "warn" || s == "warning") return Level::kWarn;
  if (s == "error") return Level::kError;
  if (s == "off") return Level::kOff;
  return core::InvalidArgumentError("unknown log level \"" + std::string(s) +
                                    "\" (want trace|debug|info|warn|error|off)");
}

core::Status Init(std::string_view level, Format format, std::string component) {
  auto l = ParseLevel(level);
  if (!l.ok()) return l.status();
  State& s = S();
  {
    core::MutexLock g(s.mu);
    s.format = format;
    s.component = std::move(component);
  }
  SetLevel(*l);
  return core::Status::OK();
}

void SetLevel(Level l) { detail::g_level.store(static_cast<int>(l), std::memory_order_relaxed); }
Level GetLevel() { return static_cast<Level>(detail::g_level.load(std::memory_order_relaxed)); }

void SetSinkForTest(std::function<void(const std::string&)> sink) {
  State& s = S();
  core::MutexLock g(s.mu);
  s.sink = std::move(sink);
}

std::string FormatLine(Format format, std::string_view ts, Level level, std::string_view msg,
                       const std::vector<Field>& fields) {
  std::string o;
  if (format == Format::kJson) {
    o = "{\"ts\":";
    AppendJsonString(&o, ts);
    o += ",\"level\":";
    AppendJsonString(&o, LevelName(level));
    o += ",\"msg\":";
    AppendJsonString(&o, msg);
    for (const auto& f : fields) {
      o.push_back(',');
      AppendJsonString(&o, f.key);
      o.push_back(':');
      if (f.quoted_in_json) {
        AppendJsonString(&o, f.value);
      } else {
        o += f.value;
      }
    }
    o.push_back('}');
  } else {
    o = "ts=";
    o.append(ts);
    o += " level=";
    o += LevelName(level);
    o += " msg=";
    AppendLogfmtValue(&o, msg);
    for (const auto& f : fields) {
      o.push_back(' ');
      o += f.key;
      o.push_back('=');
      AppendLogfmtValue(&o, f.value);
    }
  }
  return o;
}

void LogFields(Level level, std::string_view msg, const std::vector<Field>& fields) {
  if (!Enabled(level) || level == Level::kOff) return;
  State& s = S();
  Format format;
  std::function<void(const std::string&)> sink;
  std::vector<Field> all;
  {
    core::MutexLock g(s.mu);
    format = s.format;
    sink = s.sink;
    if (!s.component.empty()) all.emplace_back("component", s.component);
  }
  const std::vector<Field>* use = &fields;
  if (!all.empty()) {
    all.insert(all.end(), fields.begin(), fields.end());
    use = &all;
  }
  std::string line = FormatLine(format, Now(), level, msg, *use);
  if (sink) {
    sink(line);
    return;
  }
  std::shared_ptr<spdlog::logger> logger;
  {
    core::MutexLock g(s.mu);
    logger = Logger(s);
  }
  logger->info("{}", line);
}

void Log(Level level, std::string_view msg, std::initializer_list<Field> fields) {
  LogFields(level, msg, std::vector<Field>(fields));
}

}  // namespace tephra::kube::log

namespace tephra::kube {
namespace {
struct Counts {
  core::Mutex mu;
  std::map<std::string, uint64_t, std::less<>> by TEPHRA_GUARDED_BY(mu);
  void Add(std::string_view key) {
    core::MutexLock l(mu);
    auto it = by.find(key);
    if (it == by.end()) it = by.emplace(std::string(key), 0).first;
    ++it->second;
  }
  std::vector<std::pair<std::string, uint64_t>> All() {
    core::MutexLock l(mu);
    return {by.begin(), by.end()};
  }
};
Counts& Caught() {
  static Counts* c = new Counts();  // never destroyed: threads may report during static teardown
  return *c;
}
Counts& Skipped() {
  static Counts* c = new Counts();
  return *c;
}
}  // namespace

void CountException(std::string_view where, std::string_view what) {
  Caught().Add(where);
  log::Error("exception caught; the thread goes on").Kv("where", where).Kv("error", what);
}
std::vector<std::pair<std::string, uint64_t>> CaughtExceptions() { return Caught().All(); }

void CountSkippedObject(std::string_view resource) { Skipped().Add(resource); }
std::vector<std::pair<std::string, uint64_t>> SkippedObjects() { return Skipped().All(); }

}  // namespace tephra::kube
