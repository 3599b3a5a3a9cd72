// /cronjobs/validate (batch.volcano.sh/v1alpha1 CronJob).
//
// The rules read the three fields they check from the raw object (a CronJob whose jobTemplate does not decode
// still gets these messages). The schedule grammar is the one the CronJob controller runs (core/cron.h:
// robfig's ParseStandard, as Volcano's webhook and controller use; docs/webhook.md, "CronJob schedules"); the
// time zone must be an IANA name the controller can load (tz/tz.h, the host's zoneinfo database).
#include <algorithm>
#include <cctype>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "handlers.h"
#include "tephra/api/validation.h"
#include "tephra/core/cron.h"
#include "tephra/tz/tz.h"

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

}  // namespace

// Exposed for tests through the handler; "" when `spec` is a valid standard cron schedule.
std::string CronScheduleError(const std::string& spec) {
  auto parsed = core::cron::Schedule::Parse(spec);
  return parsed.ok() ? "" : parsed.status().message();
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
  if (!tephra::tz::Load(tz).ok()) return "invalid timeZone " + tz;
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
