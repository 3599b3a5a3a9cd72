// /cronjobs/validate (batch.volcano.sh/v1alpha1 CronJob).
//
// Tephra has no typed CronJob (no controller runs them yet), so the rules read the three fields they check
// from the raw object. The schedule grammar is the standard five-field cron that Kubernetes CronJobs use
// (docs/webhook.md, "CronJob schedules"); the time zone must be an IANA name present in the machine's
// zoneinfo database, as the Go runtime that would run the job requires.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "handlers.h"
#include "tephra/api/validation.h"

namespace tephra::webhooks {
namespace {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A non-negative decimal integer (an optional '+'), or an error text.
std::optional<int64_t> ParseUint(const std::string& s, std::string* err) {
  std::string_view v = s;
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  if (!v.empty() && v.front() == '-') {
    *err = "negative number (" + s + ") not allowed";
    return std::nullopt;
  }
  if (v.empty() || v.size() > 9 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    *err = "failed to parse int from " + s;
    return std::nullopt;
  }
  return std::stoll(std::string(v));
}

struct Bounds {
  int64_t min, max;
  const std::map<std::string, int64_t>* names;
};

const std::map<std::string, int64_t> kMonths = {{"jan", 1}, {"feb", 2}, {"mar", 3}, {"apr", 4},
                                                {"may", 5}, {"jun", 6}, {"jul", 7}, {"aug", 8},
                                                {"sep", 9}, {"oct", 10}, {"nov", 11}, {"dec", 12}};
const std::map<std::string, int64_t> kDays = {{"sun", 0}, {"mon", 1}, {"tue", 2}, {"wed", 3},
                                              {"thu", 4}, {"fri", 5}, {"sat", 6}};

std::optional<int64_t> IntOrName(const std::string& s, const Bounds& b, std::string* err) {
  if (b.names) {
    if (auto it = b.names->find(Lower(s)); it != b.names->end()) return it->second;
  }
  return ParseUint(s, err);
}

// One comma-separated element of a field: "*", "?", "a", "a-b", each with an optional "/step".
bool ParseRange(const std::string& expr, const Bounds& b, std::string* err) {
  std::vector<std::string> range_and_step = Split(expr, '/');
  if (range_and_step.size() > 2) {
    *err = "too many slashes: " + expr;
    return false;
  }
  std::vector<std::string> low_high = Split(range_and_step[0], '-');
  int64_t start = 0, end = 0;
  if (low_high[0] == "*" || low_high[0] == "?") {
    if (low_high.size() > 1) {
      *err = "too many hyphens: " + expr;
      return false;
    }
    start = b.min;
    end = b.max;
  } else {
    auto s = IntOrName(low_high[0], b, err);
    if (!s) return false;
    start = end = *s;
    if (low_high.size() == 2) {
      auto e = IntOrName(low_high[1], b, err);
      if (!e) return false;
      end = *e;
    } else if (low_high.size() > 2) {
      *err = "too many hyphens: " + expr;
      return false;
    }
  }
  if (range_and_step.size() == 2) {
    auto step = ParseUint(range_and_step[1], err);
    if (!step) return false;
    if (*step == 0) {
      *err = "step of range should be a positive number: " + expr;
      return false;
    }
    // "5/10" means "from 5 to the end, every 10".
    if (low_high.size() == 1 && low_high[0] != "*" && low_high[0] != "?") end = b.max;
  }
  if (start < b.min) {
    *err = "beginning of range (" + std::to_string(start) + ") below minimum (" + std::to_string(b.min) + "): " + expr;
    return false;
  }
  if (end > b.max) {
    *err = "end of range (" + std::to_string(end) + ") above maximum (" + std::to_string(b.max) + "): " + expr;
    return false;
  }
  if (start > end) {
    *err = "beginning of range (" + std::to_string(start) + ") beyond end of range (" + std::to_string(end) +
           "): " + expr;
    return false;
  }
  return true;
}

// Go's time.ParseDuration grammar: [-+]?(\d*\.?\d+(ns|us|µs|ms|s|m|h))+ or "0".
bool IsGoDuration(std::string_view s) {
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  if (s == "0") return true;
  if (s.empty()) return false;
  static const std::regex kPart(R"(^([0-9]*\.?[0-9]+|[0-9]+\.)(ns|us|µs|μs|ms|s|m|h))");
  std::string rest(s);
  while (!rest.empty()) {
    std::smatch m;
    if (!std::regex_search(rest, m, kPart)) return false;
    rest = m.suffix();
  }
  return true;
}

}  // namespace

// Exposed for tests through the handler; "" when `spec` is a valid standard cron schedule.
std::string CronScheduleError(const std::string& spec_in) {
  std::string spec = spec_in;
  while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.front()))) spec.erase(spec.begin());
  while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.back()))) spec.pop_back();
  if (spec.empty()) return "empty spec string";
  if (spec.front() == '@') {
    static const std::vector<std::string> kDescriptors = {"@yearly", "@annually", "@monthly", "@weekly",
                                                          "@daily",  "@midnight", "@hourly"};
    if (std::find(kDescriptors.begin(), kDescriptors.end(), spec) != kDescriptors.end()) return "";
    const std::string every = "@every ";
    if (spec.rfind(every, 0) == 0) {
      std::string d = spec.substr(every.size());
      return IsGoDuration(d) ? "" : "failed to parse duration " + spec;
    }
    return "unrecognized descriptor: " + spec;
  }
  std::vector<std::string> fields;
  std::string cur;
  for (char c : spec) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) fields.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) fields.push_back(cur);
  if (fields.size() != 5)
    return "expected exactly 5 fields, found " + std::to_string(fields.size()) + ": [" + spec + "]";
  const Bounds kBounds[5] = {{0, 59, nullptr}, {0, 23, nullptr}, {1, 31, nullptr}, {1, 12, &kMonths}, {0, 6, &kDays}};
  for (size_t i = 0; i < 5; ++i) {
    for (const std::string& part : Split(fields[i], ',')) {
      std::string err;
      if (!ParseRange(part, kBounds[i], &err)) return err;
    }
  }
  return "";
}

// "" when `tz` names a zone the Go runtime would load; else Volcano's text.
std::string TimeZoneError(const std::string& tz) {
  if (tz.empty()) return "timeZone must be nil or non-empty string, got empty string";
  static const std::regex kPart(R"(^[A-Za-z\.\-_0-9+]{1,14}$)");
  for (const std::string& part : Split(tz, '/')) {
    if (part == "." || part == ".." || (!part.empty() && part.front() == '-') || !std::regex_match(part, kPart))
      return "unknown timeZone " + tz;
  }
  if (Lower(tz) == "local") return "timeZone can't be Local, and must be defined in https://www.iana.org/time-zones";
  if (tz == "UTC") return "";
  std::ifstream f("/usr/share/zoneinfo/" + tz, std::ios::binary);
  char magic[4] = {};
  if (!f || !f.read(magic, 4) || std::string_view(magic, 4) != "TZif") return "invalid timeZone " + tz;
  return "";
}

AdmissionResponse AdmitCronJobValidate(const AdmissionRequest& req, const Context&) {
  if (!OperationIs(req, {"CREATE", "UPDATE"})) return Deny("expect operation to be 'CREATE' or 'UPDATE'");
  if (!req.object.is_object()) return Deny("CronJob is missing from the request");
  api::FieldErrors errs;
  const api::json& obj = req.object;
  const api::json* spec = obj.contains("spec") && obj["spec"].is_object() ? &obj["spec"] : nullptr;
  std::string schedule;
  if (spec && spec->contains("schedule")) {
    if (!(*spec)["schedule"].is_string()) return Deny("cannot decode CronJob: spec.schedule: expected string");
    schedule = (*spec)["schedule"].get<std::string>();
  }
  if (schedule.empty()) {
    errs.push_back({"spec.schedule", "schedule is required, but got empty"});
  } else {
    if (schedule.find("TZ") != std::string::npos)
      errs.push_back({"spec.schedule", "schedule should not contain TZ or CRON_TZ, TZ should only be set in the "
                                       "timeZone field"});
    else if (std::string e = CronScheduleError(schedule); !e.empty())
      errs.push_back({"spec.schedule", "schedule is not a valid cron expression: \"" + schedule + "\": " + e});
  }
  if (spec && spec->contains("timeZone") && !(*spec)["timeZone"].is_null()) {
    if (!(*spec)["timeZone"].is_string()) return Deny("cannot decode CronJob: spec.timeZone: expected string");
    if (std::string e = TimeZoneError((*spec)["timeZone"].get<std::string>()); !e.empty())
      errs.push_back({"spec.timeZone", e});
  }
  std::string name = req.name;
  if (obj.contains("metadata") && obj["metadata"].is_object() && obj["metadata"].contains("name") &&
      obj["metadata"]["name"].is_string())
    name = obj["metadata"]["name"].get<std::string>();
  if (name.size() > 52) {
    errs.push_back({"metadata.name",
                    "cronJob name must be no more than 52 characters to accommodate job name suffix (max 63 total)"});
  } else if (!name.empty() && !api::IsQualifiedName(name)) {
    errs.push_back({"metadata.name", "invalid cronJob name \"" + name + "\": must consist of alphanumeric characters, "
                                     "'-', '_' or '.', and must start and end with an alphanumeric character"});
  }
  return FromFieldErrors(errs);
}

}  // namespace tephra::webhooks
