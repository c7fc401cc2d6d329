#include "knot/problems/params.hpp"

#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <sstream>

#include "knot/problems/error.hpp"
#include "text.hpp"

namespace knot::problems {
namespace {

constexpr double kMax = std::numeric_limits<double>::max();

// Concatenation by appending: GCC 12 warns (-Wrestrict, a false positive) on "literal" + std::string.
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (std::string_view p : parts) s.append(p);
  return s;
}

// "a number in [lo, hi]", dropping a side that is the type's limit.
std::string range_text(const char* what, double lo, double hi) {
  if (lo > -kMax && hi < kMax) return cat({what, " in [", text::format_number(lo), ", ", text::format_number(hi), "]"});
  if (lo > -kMax) return cat({what, " >= ", text::format_number(lo)});
  if (hi < kMax) return cat({what, " <= ", text::format_number(hi)});
  return what;
}

// What a stored value looks like, for "found ..." in errors.
std::string describe_value(const std::vector<double>& numbers, int rows, int cols, bool is_text,
                           const std::string& text) {
  if (is_text) return cat({"'", text, "'"});
  if (rows > 0 || cols > 0) return cat({"a ", std::to_string(rows), " x ", std::to_string(cols), " matrix"});
  if (numbers.size() == 1) return text::format_number(numbers[0]);
  return cat({"a list of ", std::to_string(numbers.size()), " numbers"});
}

}  // namespace

ParamMap& ParamMap::set(std::string key, double v) {
  values_[std::move(key)] = Value{{v}, 0, 0, {}, false};
  return *this;
}

ParamMap& ParamMap::set(std::string key, std::vector<double> v) {
  values_[std::move(key)] = Value{std::move(v), 0, 0, {}, false};
  return *this;
}

ParamMap& ParamMap::set(std::string key, std::string v) {
  values_[std::move(key)] = Value{{}, 0, 0, std::move(v), true};
  return *this;
}

ParamMap& ParamMap::set_matrix(std::string key, int rows, int cols, std::vector<double> row_major) {
  if (rows < 0 || cols < 0 || row_major.size() != std::size_t(rows) * std::size_t(cols))
    fail(key,
         cat({std::to_string(rows), " x ", std::to_string(cols), " = ", std::to_string(rows * cols),
              " numbers in set_matrix"}),
         std::to_string(row_major.size()));
  values_[std::move(key)] = Value{std::move(row_major), rows, cols, {}, false};
  return *this;
}

bool ParamMap::has(std::string_view key) const { return values_.find(key) != values_.end(); }

double ParamMap::number(std::string_view key, double fallback, double lo, double hi) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const Value& v = it->second;
  if (v.is_text || (v.rows > 0 || v.cols > 0) || v.numbers.size() != 1)
    fail(key, range_text("a number", lo, hi), describe_value(v.numbers, v.rows, v.cols, v.is_text, v.text));
  const double x = v.numbers[0];
  if (!std::isfinite(x) || x < lo || x > hi) fail(key, range_text("a finite number", lo, hi), text::format_number(x));
  return x;
}

int ParamMap::integer(std::string_view key, int fallback, int lo, int hi) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const Value& v = it->second;
  const std::string expected = range_text("an integer", lo, hi);
  if (v.is_text || (v.rows > 0 || v.cols > 0) || v.numbers.size() != 1)
    fail(key, expected, describe_value(v.numbers, v.rows, v.cols, v.is_text, v.text));
  const double x = v.numbers[0];
  if (!std::isfinite(x) || x != std::floor(x) || x < lo || x > hi) fail(key, expected, text::format_number(x));
  return static_cast<int>(x);
}

bool ParamMap::boolean(std::string_view key, bool fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const Value& v = it->second;
  if (v.is_text && (v.text == "true" || v.text == "false")) return v.text == "true";
  if (!v.is_text && v.rows == 0 && v.numbers.size() == 1 && (v.numbers[0] == 0 || v.numbers[0] == 1))
    return v.numbers[0] == 1;
  fail(key, "a boolean (true, false, 1 or 0)", describe_value(v.numbers, v.rows, v.cols, v.is_text, v.text));
}

std::vector<double> ParamMap::vector(std::string_view key, std::vector<double> fallback, std::size_t size) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const Value& v = it->second;
  const std::string expected =
      size == 0 ? std::string("a list of numbers") : cat({"a list of ", std::to_string(size), " numbers"});
  if (v.is_text || (v.rows > 0 || v.cols > 0) || (size != 0 && v.numbers.size() != size))
    fail(key, expected, describe_value(v.numbers, v.rows, v.cols, v.is_text, v.text));
  for (std::size_t i = 0; i < v.numbers.size(); ++i)
    if (!std::isfinite(v.numbers[i]))
      fail(key, cat({expected, ", all finite"}), cat({text::format_number(v.numbers[i]), " at index ", std::to_string(i)}));
  return v.numbers;
}

std::array<int, 2> ParamMap::shape(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end() || it->second.is_text) return {0, 0};
  return {it->second.rows, it->second.cols};
}

std::vector<double> ParamMap::matrix(std::string_view key, int rows, int cols) const {
  const std::string expected = cat({"a ", std::to_string(rows), " x ", std::to_string(cols), " matrix"});
  auto it = values_.find(key);
  if (it == values_.end()) fail(key, expected, "nothing (the key is required)");
  const Value& v = it->second;
  if (v.is_text || v.rows != rows || v.cols != cols)
    fail(key, expected, describe_value(v.numbers, v.rows, v.cols, v.is_text, v.text));
  std::vector<double> col_major(v.numbers.size());
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const double x = v.numbers[std::size_t(i) * cols + j];
      if (!std::isfinite(x))
        fail(key, cat({expected, " of finite numbers"}),
             cat({text::format_number(x), " at row ", std::to_string(i), ", column ", std::to_string(j)}));
      col_major[std::size_t(j) * rows + i] = x;
    }
  return col_major;
}

std::string ParamMap::string(std::string_view key, std::string fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const Value& v = it->second;
  if (!v.is_text) fail(key, "a string", describe_value(v.numbers, v.rows, v.cols, v.is_text, v.text));
  return v.text;
}

std::string ParamMap::path(std::string_view key) const {
  auto it = values_.find(key);
  if (it == values_.end()) fail(key, "a file path", "nothing (the key is required)");
  const Value& v = it->second;
  if (!v.is_text) fail(key, "a file path", describe_value(v.numbers, v.rows, v.cols, v.is_text, v.text));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(v.text, ec)) fail(key, "an existing file", cat({"'", v.text, "'"}));
  return v.text;
}

void ParamMap::fail(std::string_view key, std::string expected, std::string found) const {
  throw ProblemError(SourceLocation{}, cat({context_, ".", key}), std::move(expected), std::move(found));
}

}  // namespace knot::problems
