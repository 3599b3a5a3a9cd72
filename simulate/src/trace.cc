#include <algorithm>

#include "csv.h"
#include "tephra/simulate/replay.h"

namespace tephra::simulate {

using core::Status;
using core::StatusCode;
using internal::Csv;

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
