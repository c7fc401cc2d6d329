// The fields of one line of a table file (reference tables, trajectory.csv), as views into the line
// with their columns, so errors can name line and column. Shared by the loader's table reader and the
// initial-guess reader.
#pragma once

#include <string_view>
#include <vector>

namespace knot::problems::detail {

struct Cell {
  std::string_view text;  // trimmed; empty for an empty field between commas
  int column = 0;         // 1-based, of the field
};

// Comma-separated when the line has a comma (empty fields kept), else separated by whitespace; each
// field trimmed. The caller removes comments first.
inline std::vector<Cell> split_fields(std::string_view line) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
  const bool commas = line.find(',') != std::string_view::npos;
  std::vector<Cell> cells;
  std::size_t i = 0;
  while (i <= line.size()) {
    std::size_t j = i;
    if (commas) {
      j = std::min(line.find(',', i), line.size());
    } else {
      while (i < line.size() && is_space(line[i])) ++i;
      if (i == line.size()) break;
      j = i;
      while (j < line.size() && !is_space(line[j])) ++j;
    }
    std::size_t a = i, b = j;
    while (a < b && is_space(line[a])) ++a;
    while (b > a && is_space(line[b - 1])) --b;
    cells.push_back({line.substr(a, b - a), static_cast<int>(a + 1)});
    i = j + 1;
  }
  return cells;
}

}  // namespace knot::problems::detail
