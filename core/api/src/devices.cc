#include "tephra/api/devices.h"

#include <charconv>
#include <nlohmann/json.hpp>

namespace tephra::api {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string_view::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

template <typename T>
bool ParseInt(std::string_view s, T* out) {
  s = Trim(s);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::vector<std::string> SplitCardList(std::string_view list) {
  std::vector<std::string> out;
  for (auto item : Split(list, ','))
    if (auto t = Trim(item); !t.empty()) out.emplace_back(t);
  return out;
}

std::string JoinCardList(const std::vector<std::string>& cards) {
  std::string out;
  for (const auto& c : cards) {
    if (!out.empty()) out += ',';
    out += c;
  }
  return out;
}

std::optional<int> AscendCardIndex(std::string_view id) {
  if (!id.starts_with(kAscendCardPrefix)) return std::nullopt;
  int i = 0;
  if (!ParseInt(id.substr(kAscendCardPrefix.size()), &i) || i < 0) return std::nullopt;
  return i;
}

std::optional<AscendDeviceInfo> ParseAscendDeviceInfo(std::string_view cfg) {
  auto j = nlohmann::json::parse(cfg, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  auto di = j.find("DeviceInfo");
  if (di == j.end() || !di->is_object()) return std::nullopt;
  auto dl = di->find("DeviceList");
  if (dl == di->end() || !dl->is_object()) return std::nullopt;
  AscendDeviceInfo out;
  auto list = [&](std::string_view key) {
    auto it = dl->find(std::string(key));
    return it != dl->end() && it->is_string() ? SplitCardList(it->get<std::string>()) : std::vector<std::string>{};
  };
  out.unhealthy = list(kAscendUnhealthyKey);
  out.network_unhealthy = list(kAscendNetworkUnhealthyKey);
  out.recovering = list(kAscendRecoveringKey);
  return out;
}

std::vector<VgpuCard> ParseVgpuRegister(std::string_view annotation, int* errors) {
  std::vector<VgpuCard> out;
  for (auto entry : Split(annotation, ':')) {
    if (Trim(entry).empty()) continue;
    auto f = Split(entry, ',');
    VgpuCard c;
    if (f.size() < 6 || !ParseInt(f[1], &c.split) || !ParseInt(f[2], &c.memory)) {
      if (errors) ++*errors;
      continue;
    }
    c.uuid = std::string(Trim(f[0]));
    c.type = std::string(f[3]);
    auto health = Trim(f[4]);
    c.healthy = health == "true" || health == "True" || health == "TRUE" || health == "1" || health == "t" || health == "T";
    c.mode = std::string(Trim(f[5]));
    out.push_back(std::move(c));
  }
  return out;
}

std::string EncodeVgpuRegister(const std::vector<VgpuCard>& cards) {
  std::string out;
  for (const auto& c : cards) {
    out += c.uuid + "," + std::to_string(c.split) + "," + std::to_string(c.memory) + "," + c.type + "," +
           (c.healthy ? "true" : "false") + "," + c.mode + ":";
  }
  return out;
}

std::string EncodeVgpuIds(const std::vector<std::vector<VgpuAssignment>>& per_container) {
  std::string out;
  for (size_t i = 0; i < per_container.size(); ++i) {
    if (i > 0) out += ';';
    for (const auto& a : per_container[i])
      out += a.uuid + ",NVIDIA," + std::to_string(a.memory) + "," + std::to_string(a.cores) + ":";
  }
  return out;
}

std::vector<std::vector<VgpuAssignment>> DecodeVgpuIds(std::string_view annotation) {
  std::vector<std::vector<VgpuAssignment>> out;
  if (annotation.empty()) return out;
  for (auto container : Split(annotation, ';')) {
    std::vector<VgpuAssignment> cards;
    for (auto entry : Split(container, ':')) {
      auto f = Split(entry, ',');
      VgpuAssignment a;
      if (f.size() < 4 || !ParseInt(f[2], &a.memory) || !ParseInt(f[3], &a.cores)) continue;
      a.uuid = std::string(Trim(f[0]));
      cards.push_back(std::move(a));
    }
    out.push_back(std::move(cards));
  }
  return out;
}

std::string MigProfile::Name() const {
  std::string out = std::to_string(slices) + "g." + std::to_string(memory_gb) + "gb";
  if (!extension.empty()) out += "+" + extension;
  return out;
}

std::string MigProfile::ResourceName() const { return std::string(kMigResourcePrefix) + Name(); }

std::optional<MigProfile> ParseMigProfile(std::string_view name) {
  MigProfile p;
  if (size_t plus = name.find('+'); plus != std::string_view::npos) {
    p.extension = std::string(name.substr(plus + 1));
    name = name.substr(0, plus);
    if (p.extension.empty()) return std::nullopt;
  }
  const size_t g = name.find("g.");
  if (g == std::string_view::npos || name.size() < g + 4 || name.substr(name.size() - 2) != "gb") return std::nullopt;
  if (!ParseInt(name.substr(0, g), &p.slices) || !ParseInt(name.substr(g + 2, name.size() - g - 4), &p.memory_gb))
    return std::nullopt;
  if (p.slices < 1 || p.slices > 8 || p.memory_gb < 1) return std::nullopt;
  return p;
}

std::optional<MigProfile> MigProfileOfResource(std::string_view resource) {
  if (resource.substr(0, kMigResourcePrefix.size()) != kMigResourcePrefix) return std::nullopt;
  return ParseMigProfile(resource.substr(kMigResourcePrefix.size()));
}

std::optional<MigProfile> MigProfileOfProduct(std::string_view product) {
  constexpr std::string_view kMarker = "-MIG-";
  const size_t at = product.rfind(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  return ParseMigProfile(product.substr(at + kMarker.size()));
}

}  // namespace tephra::api
