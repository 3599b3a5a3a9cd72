// Formatting shared by every command: Go-compatible printf tables, ages, dates, -o json|yaml.
#include "tephra/ctl/output.h"

#include <cstdarg>
#include <cstdio>
#include <ctime>

#include "tephra/kube/yaml.h"

namespace tephra::ctl {

std::string Sprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

std::string HumanDuration(std::chrono::nanoseconds d) {
  using namespace std::chrono;
  const int64_t seconds = duration_cast<std::chrono::seconds>(d).count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    int64_t s = seconds % 60;
    return s == 0 ? std::to_string(minutes) + "m" : std::to_string(minutes) + "m" + std::to_string(s) + "s";
  }
  if (minutes < 60 * 3) return std::to_string(minutes) + "m";
  const int64_t hours = seconds / 3600;
  if (hours < 8) {
    int64_t m = minutes % 60;
    return m == 0 ? std::to_string(hours) + "h" : std::to_string(hours) + "h" + std::to_string(m) + "m";
  }
  if (hours < 48) return std::to_string(hours) + "h";
  if (hours < 24 * 8) {
    int64_t h = hours % 24;
    return h == 0 ? std::to_string(hours / 24) + "d" : std::to_string(hours / 24) + "d" + std::to_string(h) + "h";
  }
  if (hours < 24 * 365 * 2) return std::to_string(hours / 24) + "d";
  if (hours < 24 * 365 * 8) {
    int64_t dy = (hours / 24) % 365;
    return dy == 0 ? std::to_string(hours / 24 / 365) + "y"
                   : std::to_string(hours / 24 / 365) + "y" + std::to_string(dy) + "d";
  }
  return std::to_string(hours / 24 / 365) + "y";
}

std::string Age(const std::string& rfc3339, const core::Clock& clock) {
  core::Clock::WallTime t;
  if (rfc3339.empty() || !core::ParseRfc3339(rfc3339, &t)) return "<unknown>";
  return HumanDuration(clock.WallNow() - t);
}

namespace {
bool ToTm(const std::string& rfc3339, std::tm* tm) {
  core::Clock::WallTime t;
  if (rfc3339.empty() || !core::ParseRfc3339(rfc3339, &t)) return false;
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  return gmtime_r(&tt, tm) != nullptr;
}
}  // namespace

std::string GoTimeString(const std::string& rfc3339) {
  std::tm tm{};
  if (!ToTm(rfc3339, &tm)) return "0001-01-01 00:00:00 +0000 UTC";
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S +0000 UTC", &tm);
  return buf;
}

std::string GoDate(const std::string& rfc3339) {
  std::tm tm{};
  if (!ToTm(rfc3339, &tm)) return "0001-01-01";
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

core::StatusOr<Format> ParseFormat(std::string_view text) {
  if (text.empty()) return Format::kTable;
  if (text == "wide") return Format::kWide;
  if (text == "json") return Format::kJson;
  if (text == "yaml") return Format::kYaml;
  return core::InvalidArgumentError("unsupported output format \"" + std::string(text) + "\" (json, yaml or wide)");
}

namespace {
api::json Clean(api::json obj, const api::ResourceInfo& r) {
  if (!obj.is_object()) return obj;
  obj["apiVersion"] = r.ApiVersion();
  obj["kind"] = std::string(r.kind);
  if (auto m = obj.find("metadata"); m != obj.end() && m->is_object()) m->erase("managedFields");
  return obj;
}
void Print(std::ostream& out, const api::json& j, Format f) {
  if (f == Format::kYaml) out << kube::JsonToYaml(j);
  else out << j.dump(4) << "\n";  // kubectl's -o json indents by 4
}
}  // namespace

void PrintObject(std::ostream& out, api::json obj, const api::ResourceInfo& r, Format f) {
  Print(out, Clean(std::move(obj), r), f);
}

void PrintList(std::ostream& out, const std::vector<api::json>& items, const api::ResourceInfo& r, Format f) {
  api::json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", api::json::array()},
                    {"metadata", {{"resourceVersion", ""}}}};
  for (const auto& i : items) list["items"].push_back(Clean(i, r));
  Print(out, list, f);
}

}  // namespace tephra::ctl
