#include "yaml_reader.hpp"

#include <algorithm>
#include <cmath>

namespace knot::problems::yaml {

namespace {

constexpr double kMax = std::numeric_limits<double>::max();

// ParamReader's defaults are +-DBL_MAX rather than infinities; both mean "no bound".
bool bounded(double v) { return std::isfinite(v) && std::abs(v) < kMax; }

const std::vector<std::string> kTrue = {"true", "True", "TRUE"};
const std::vector<std::string> kFalse = {"false", "False", "FALSE"};

}  // namespace

bool Range::contains(double v) const {
  if (lo_open ? !(v > lo) : !(v >= lo)) return false;
  if (hi_open ? !(v < hi) : !(v <= hi)) return false;
  return true;
}

std::string Range::describe(std::string_view noun) const {
  const bool has_lo = bounded(lo), has_hi = bounded(hi);
  std::string out(noun);
  if (has_lo && has_hi) {
    out.append(" in ").append(lo_open ? "(" : "[").append(format_number(lo)).append(", ");
    out.append(format_number(hi)).append(hi_open ? ")" : "]");
  } else if (has_lo) {
    out.append(lo_open ? " > " : " >= ").append(format_number(lo));
  } else if (has_hi) {
    out.append(hi_open ? " < " : " <= ").append(format_number(hi));
  } else if (noun == "a number") {
    out = "a finite number";
  }
  return out;
}

void fail(const Node& node, const std::string& path, std::string expected) {
  throw ProblemError(node.at.location(), path, std::move(expected), found(node));
}

void fail(const Node& node, const std::string& path, std::string expected, std::string found_text, std::string hint) {
  throw ProblemError(node.at.location(), path, std::move(expected), std::move(found_text), std::move(hint));
}

double to_number(const Node& node, const std::string& path, const Range& range, bool allow_inf) {
  const std::string expected = range.describe() + (allow_inf ? " (or .inf, -.inf)" : "");
  if (!node.is_scalar() || !node.plain) fail(node, path, expected);
  const Number n = parse_number(node.text);
  switch (n.cls) {
    case NumberClass::NotANumber:
    case NumberClass::NaN:
      fail(node, path, expected);
    case NumberClass::OutOfRange:
      fail(node, path, expected, node.text + " (beyond the range of a double)");
    case NumberClass::Infinite:
      if (!allow_inf) fail(node, path, expected);
      if (n.value > 0 ? range.hi < n.value : range.lo > n.value) fail(node, path, expected);
      return n.value;
    case NumberClass::Finite:
      break;
  }
  if (!range.contains(n.value)) fail(node, path, expected);
  return n.value;
}

long long to_integer(const Node& node, const std::string& path, long long lo, long long hi) {
  std::string expected = "an integer";
  if (lo > std::numeric_limits<int>::min() && hi < std::numeric_limits<int>::max())
    expected += " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  else if (lo > std::numeric_limits<int>::min())
    expected += " >= " + std::to_string(lo);
  else if (hi < std::numeric_limits<int>::max())
    expected += " <= " + std::to_string(hi);
  long long v = 0;
  if (!node.is_scalar() || !node.plain || !parse_integer(node.text, v) || v < lo || v > hi) fail(node, path, expected);
  return v;
}

bool to_bool(const Node& node, const std::string& path) {
  if (node.is_scalar() && node.plain) {
    if (std::find(kTrue.begin(), kTrue.end(), node.text) != kTrue.end()) return true;
    if (std::find(kFalse.begin(), kFalse.end(), node.text) != kFalse.end()) return false;
  }
  fail(node, path, "true or false");
}

std::string to_string(const Node& node, const std::string& path) {
  if (!node.is_scalar()) fail(node, path, "a string");
  return node.text;
}

std::string to_name(const Node& node, const std::string& path) {
  if (!node.is_scalar()) fail(node, path, "a name (a string)");
  if (node.plain) {
    long long i = 0;
    if (parse_number(node.text).cls != NumberClass::NotANumber || parse_integer(node.text, i))
      fail(node, path, "a name (a string)", "the number " + node.text, "quote it to use it as a name");
    if (std::find(kTrue.begin(), kTrue.end(), node.text) != kTrue.end() ||
        std::find(kFalse.begin(), kFalse.end(), node.text) != kFalse.end())
      fail(node, path, "a name (a string)", "the boolean " + node.text, "quote it to use it as a name");
  }
  if (node.text.empty()) fail(node, path, "a non-empty name");
  for (std::size_t i = 0; i < node.text.size(); ++i) {
    const auto c = static_cast<unsigned char>(node.text[i]);
    if (c < 0x20 || c == 0x7f)
      fail(node, path, "a name without control characters",
           quote(node.text) + " (character " + std::to_string(c) + " at byte " + std::to_string(i) + ")");
  }
  return node.text;
}

std::string index_path(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

namespace {

std::string list_of(std::size_t size, std::string_view noun, std::string_view size_name) {
  if (size == 0) return "a list of " + std::string(noun) + "s";
  std::string out = "a list of " + std::to_string(size) + " " + std::string(noun) + (size == 1 ? "" : "s");
  if (!size_name.empty()) out.append(" (").append(size_name).append(")");
  return out;
}

}  // namespace

std::vector<double> to_vector(const Node& node, const std::string& path, std::size_t size, const Range& range,
                              bool allow_inf, std::string_view size_name) {
  const std::string expected = list_of(size, "number", size_name);
  if (!node.is_sequence() || (size != 0 && node.items.size() != size)) fail(node, path, expected);
  std::vector<double> out;
  out.reserve(node.items.size());
  for (std::size_t i = 0; i < node.items.size(); ++i)
    out.push_back(to_number(node.items[i], index_path(path, i), range, allow_inf));
  return out;
}

std::vector<double> to_matrix(const Node& node, const std::string& path, int rows, int cols) {
  const std::string expected = "a list of " + std::to_string(rows) + " rows of " + std::to_string(cols) + " numbers";
  if (rows < 0 || cols < 0 || !node.is_sequence() || node.items.size() != static_cast<std::size_t>(rows))
    fail(node, path, expected);
  std::vector<double> out(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
  for (int i = 0; i < rows; ++i) {
    const Node& row = node.items[static_cast<std::size_t>(i)];
    const std::string row_path = index_path(path, static_cast<std::size_t>(i));
    if (!row.is_sequence() || row.items.size() != static_cast<std::size_t>(cols))
      fail(row, row_path, "a row of " + std::to_string(cols) + " numbers");
    for (int j = 0; j < cols; ++j)
      out[static_cast<std::size_t>(j) * static_cast<std::size_t>(rows) + static_cast<std::size_t>(i)] =
          to_number(row.items[static_cast<std::size_t>(j)], index_path(row_path, static_cast<std::size_t>(j)));
  }
  return out;
}

std::vector<std::string> to_names(const Node& node, const std::string& path, std::size_t size,
                                  std::string_view size_name) {
  if (!node.is_sequence() || (size != 0 && node.items.size() != size))
    fail(node, path, list_of(size, "name", size_name));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.items.size(); ++i) out.push_back(to_name(node.items[i], index_path(path, i)));
  return out;
}

std::filesystem::path resolve_file(const Node& node, const std::string& path) {
  const std::string text = to_string(node, path);
  if (text.empty()) fail(node, path, "a file path");
  std::filesystem::path file(text);
  if (file.is_relative() && node.at.source) file = node.at.source->dir / file;
  file = file.lexically_normal();
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    fail(node, path, "an existing file", quote(text) + " (no such file: " + file.string() + ")");
  if (!std::filesystem::is_regular_file(file, ec)) fail(node, path, "a regular file", quote(file.string()));
  return file;
}

// --- MapReader ---------------------------------------------------------------------------------

MapReader::MapReader(const Node* node, std::string path, const Where& fallback)
    : node_(node), path_(std::move(path)), at_(node ? node->at : fallback) {
  if (node_ && !node_->is_map() && !node_->is_null())
    yaml::fail(*node_, path_, path_.empty() ? "a mapping of problem keys" : "a mapping");
}

const std::vector<Entry>& MapReader::entries() const {
  static const std::vector<Entry> none;
  return node_ ? node_->entries : none;
}

std::string MapReader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const Node* MapReader::find(std::string_view key) const {
  if (std::find(asked_.begin(), asked_.end(), key) == asked_.end()) asked_.emplace_back(key);
  for (const Entry& e : entries())
    if (e.key == key) return &e.value;
  return nullptr;
}

const Node& MapReader::require(std::string_view key, std::string_view expected) const {
  if (const Node* n = find(key)) return *n;
  // A missing key next to an unknown one is usually a misspelling of it.
  std::string hint;
  for (const Entry& e : entries()) {
    if (std::find(asked_.begin(), asked_.end(), e.key) != asked_.end()) continue;
    if (!closest(e.key, {std::string(key)}).empty()) {
      hint = "is " + quote(e.key) + " a misspelling of it?";
      break;
    }
  }
  throw ProblemError(at_.location(), key_path(key), std::string(expected), "no such key", hint);
}

void MapReader::unknown_key(const Entry& e, const std::vector<std::string>& known) const {
  const std::string suggestion = closest(e.key, known);
  const std::string expected = known.empty() ? "no keys here" : "one of " + join_alternatives(known);
  throw ProblemError(e.key_at.location(), key_path(e.key), expected, "unknown key " + quote(e.key),
                     suggestion.empty() ? std::string() : "did you mean '" + suggestion + "'?");
}

void MapReader::allow_only(const std::vector<std::string>& known) const {
  for (const Entry& e : entries())
    if (std::find(known.begin(), known.end(), e.key) == known.end()) unknown_key(e, known);
}

void MapReader::finish() const {
  for (const Entry& e : entries())
    if (std::find(asked_.begin(), asked_.end(), e.key) == asked_.end()) unknown_key(e, asked_);
}

bool MapReader::has(std::string_view key) const { return find(key) != nullptr; }

double MapReader::number(std::string_view key, double fallback, double lo, double hi) const {
  const Node* n = find(key);
  return n ? to_number(*n, key_path(key), Range::closed(lo, hi)) : fallback;
}

int MapReader::integer(std::string_view key, int fallback, int lo, int hi) const {
  const Node* n = find(key);
  return n ? static_cast<int>(to_integer(*n, key_path(key), lo, hi)) : fallback;
}

bool MapReader::boolean(std::string_view key, bool fallback) const {
  const Node* n = find(key);
  return n ? to_bool(*n, key_path(key)) : fallback;
}

std::vector<double> MapReader::vector(std::string_view key, std::vector<double> fallback, std::size_t size) const {
  const Node* n = find(key);
  return n ? to_vector(*n, key_path(key), size) : std::move(fallback);
}

std::vector<double> MapReader::matrix(std::string_view key, int rows, int cols) const {
  const std::string expected = "a list of " + std::to_string(rows) + " rows of " + std::to_string(cols) + " numbers";
  return to_matrix(require(key, expected), key_path(key), rows, cols);
}

std::array<int, 2> MapReader::shape(std::string_view key) const {
  // A peek: the key counts as read only when the factory asks for its value.
  const Node* n = nullptr;
  for (const Entry& e : entries())
    if (e.key == key) n = &e.value;
  if (!n || !n->is_sequence() || n->items.empty() || !n->items.front().is_sequence()) return {0, 0};
  return {static_cast<int>(n->items.size()), static_cast<int>(n->items.front().items.size())};
}

std::string MapReader::string(std::string_view key, std::string fallback) const {
  const Node* n = find(key);
  return n ? to_string(*n, key_path(key)) : std::move(fallback);
}

std::string MapReader::path(std::string_view key) const {
  return resolve_file(require(key, "a file path"), key_path(key)).string();
}

void MapReader::fail(std::string_view key, std::string expected, std::string found_text) const {
  const Node* n = find(key);
  throw ProblemError(n ? n->at.location() : at_.location(), key_path(key), std::move(expected), std::move(found_text));
}

}  // namespace knot::problems::yaml
