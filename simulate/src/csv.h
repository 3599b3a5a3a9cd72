// The CSV reading shared by the trace parsers (openb lists, ITP job traces): a header line names the
// columns, cells are found by name, and errors name the line and the column.
#pragma once

#include <charconv>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tephra/core/status.h"

namespace tephra::simulate::internal {

using core::Status;
using core::StatusCode;

inline std::vector<std::string_view> SplitLine(std::string_view line) {
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

}  // namespace tephra::simulate::internal
