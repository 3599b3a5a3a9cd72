#include "tephra/tz/tz.h"

#include <cctz/time_zone.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>

namespace tephra::tz {
namespace {

class CctzZone final : public core::cron::Zone {
 public:
  CctzZone(std::string name, cctz::time_zone tz) : name_(std::move(name)), tz_(tz) {}
  int32_t OffsetAt(int64_t unix_seconds) const override {
    const auto tp = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::from_time_t(0)) +
                    std::chrono::seconds(unix_seconds);
    return static_cast<int32_t>(tz_.lookup(tp).offset);
  }
  const std::string& Name() const override { return name_; }

 private:
  std::string name_;
  cctz::time_zone tz_;
};

}  // namespace

core::StatusOr<std::shared_ptr<const core::cron::Zone>> Load(std::string_view name_in) {
  std::string name(name_in);
  if (name.empty() || name == "UTC") return std::shared_ptr<const core::cron::Zone>(&core::cron::Utc(), [](auto*) {});
  // cctz also accepts "Fixed/UTC+hh:mm" and absolute paths; Go does not (and a path must not leave the
  // database directory).
  if (name.front() == '/' || name.find("..") != std::string::npos || name.rfind("Fixed/", 0) == 0 ||
      name == "localtime")
    return core::NotFoundError("unknown time zone " + name);
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const core::cron::Zone>> cache;
  std::lock_guard<std::mutex> l(mu);
  if (auto it = cache.find(name); it != cache.end()) return it->second;
  cctz::time_zone tz;
  if (!cctz::load_time_zone(name, &tz)) return core::NotFoundError("unknown time zone " + name);
  auto z = std::make_shared<CctzZone>(name, tz);
  cache.emplace(name, z);
  return std::shared_ptr<const core::cron::Zone>(z);
}

}  // namespace tephra::tz
