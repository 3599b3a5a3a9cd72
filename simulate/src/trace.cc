#include <charconv>
#include <map>

#include "tephra/simulate/replay.h"

namespace tephra::simulate {

namespace {

using core::Status;
using core::StatusCode;

std::vector<std::string_view> SplitLine(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    out.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// A CSV file with a header line; cells looked up by column name.
class Csv {
 public:
  static core::StatusOr<Csv> Parse(std::string_view text, std::initializer_list<const char*> required) {
    Csv c;
    size_t pos = 0;
    int line_no = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
      pos = end == std::string_view::npos ? text.size() : end + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty()) continue;
      if (c.columns_.empty()) {
        auto names = SplitLine(line);
        for (size_t i = 0; i < names.size(); ++i) c.columns_[std::string(names[i])] = i;
        for (const char* r : required)
          if (!c.columns_.count(r)) return Status(StatusCode::kInvalidArgument, std::string("header has no column ") + r);
        continue;
      }
      c.rows_.push_back({line_no, SplitLine(line)});
    }
    if (c.columns_.empty()) return Status(StatusCode::kInvalidArgument, "empty file: no header line");
    return c;
  }
  struct Row {
    int line;
    std::vector<std::string_view> cells;
  };
  const std::vector<Row>& rows() const { return rows_; }
  std::string_view Cell(const Row& r, const char* column) const {
    auto it = columns_.find(column);
    if (it == columns_.end()) return {};  // an optional column this file does not have
    return it->second < r.cells.size() ? r.cells[it->second] : std::string_view();
  }
  core::StatusOr<int64_t> Int(const Row& r, const char* column) const {
    std::string_view v = Cell(r, column);
    if (v.empty()) return int64_t{0};
    int64_t out = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || p != v.data() + v.size() || out < 0)
      return Status(StatusCode::kInvalidArgument, "line " + std::to_string(r.line) + ", column " + column + ": \"" +
                                                      std::string(v) + "\" is not a whole number >= 0");
    return out;
  }

 private:
  std::map<std::string, size_t> columns_;
  std::vector<Row> rows_;
};

}  // namespace

core::StatusOr<std::vector<TraceNode>> ParseNodeList(std::string_view csv) {
  auto c = Csv::Parse(csv, {"sn", "cpu_milli", "memory_mib", "gpu"});
  if (!c.ok()) return c.status().Annotate("node list");
  std::vector<TraceNode> out;
  for (const auto& r : c->rows()) {
    TraceNode n;
    n.name = std::string(c->Cell(r, "sn"));
    if (n.name.empty()) return Status(StatusCode::kInvalidArgument, "node list: line " + std::to_string(r.line) + ": empty sn");
    TEPHRA_ASSIGN_OR_RETURN(n.cpu_milli, c->Int(r, "cpu_milli"));
    TEPHRA_ASSIGN_OR_RETURN(n.memory_mib, c->Int(r, "memory_mib"));
    TEPHRA_ASSIGN_OR_RETURN(int64_t gpus, c->Int(r, "gpu"));
    n.gpus = static_cast<int>(std::min<int64_t>(gpus, 1024));
    n.model = std::string(c->Cell(r, "model"));
    out.push_back(std::move(n));
  }
  return out;
}

core::StatusOr<std::vector<TracePod>> ParsePodList(std::string_view csv) {
  auto c = Csv::Parse(csv, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!c.ok()) return c.status().Annotate("pod list");
  std::vector<TracePod> out;
  for (const auto& r : c->rows()) {
    TracePod p;
    p.name = std::string(c->Cell(r, "name"));
    if (p.name.empty()) return Status(StatusCode::kInvalidArgument, "pod list: line " + std::to_string(r.line) + ": empty name");
    TEPHRA_ASSIGN_OR_RETURN(p.cpu_milli, c->Int(r, "cpu_milli"));
    TEPHRA_ASSIGN_OR_RETURN(p.memory_mib, c->Int(r, "memory_mib"));
    TEPHRA_ASSIGN_OR_RETURN(int64_t num_gpu, c->Int(r, "num_gpu"));
    p.num_gpu = static_cast<int>(std::min<int64_t>(num_gpu, 1024));
    TEPHRA_ASSIGN_OR_RETURN(p.gpu_milli, c->Int(r, "gpu_milli"));
    if (p.num_gpu > 0 && (p.gpu_milli <= 0 || p.gpu_milli > 1000))
      return Status(StatusCode::kInvalidArgument, "pod list: line " + std::to_string(r.line) +
                                                      ", column gpu_milli: want 1..1000 for a pod with GPUs, got " +
                                                      std::to_string(p.gpu_milli));
    if (p.num_gpu == 0) p.gpu_milli = 0;
    if (auto s = c->Cell(r, "gpu_spec"); !s.empty()) p.gpu_spec = std::string(s);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tephra::simulate
