// Private to the loader: typed reads from the YAML tree (yaml_tree.hpp), each failure a ProblemError
// at the value's file position with its key path, what was expected and what was found.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "knot/problems/params.hpp"
#include "yaml_tree.hpp"

namespace knot::problems::yaml {

// The interval a number must lie in; describe() is its text in messages ("a number > 0").
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false, hi_open = false;

  static Range any() { return {}; }
  static Range positive() { return {0.0, std::numeric_limits<double>::infinity(), true, false}; }
  static Range nonnegative() { return {0.0, std::numeric_limits<double>::infinity(), false, false}; }
  static Range closed(double lo, double hi) { return {lo, hi, false, false}; }
  bool contains(double v) const;
  std::string describe(std::string_view noun = "a number") const;
};

[[noreturn]] void fail(const Node& node, const std::string& path, std::string expected);
[[noreturn]] void fail(const Node& node, const std::string& path, std::string expected, std::string found_text,
                       std::string hint = {});

// A finite number in `range` (also +-.inf when `allow_inf`).
double to_number(const Node& node, const std::string& path, const Range& range = {}, bool allow_inf = false);
long long to_integer(const Node& node, const std::string& path, long long lo, long long hi);
bool to_bool(const Node& node, const std::string& path);
// Any scalar, as written.
std::string to_string(const Node& node, const std::string& path);
// A name (the problem's, a state's, a term's): a non-empty scalar, not a plain number or boolean
// (`name: 42` is a forgotten quote more often than a name), without control characters. Scalars are
// valid UTF-8 already (parse() checks).
std::string to_name(const Node& node, const std::string& path);
// A list of numbers; `size` 0 accepts any length; `size_name` ("nx") explains the expected length.
std::vector<double> to_vector(const Node& node, const std::string& path, std::size_t size, const Range& range = {},
                              bool allow_inf = false, std::string_view size_name = {});
// A rows x cols matrix written as a list of rows; returned column-major.
std::vector<double> to_matrix(const Node& node, const std::string& path, int rows, int cols);
// A list of names, each read by to_name.
std::vector<std::string> to_names(const Node& node, const std::string& path, std::size_t size,
                                  std::string_view size_name = {});
std::string index_path(const std::string& path, std::size_t i);  // "costs[2]"

// Reads one mapping. Records every key asked for, so finish() can name a key nobody read, with the
// closest known key as a suggestion; implements ParamReader so model factories read YAML directly.
class MapReader final : public ParamReader {
 public:
  // `node` must be a mapping; null or absent (nullptr) reads as an empty one whose errors point at
  // `fallback`. `path` prefixes every key ("costs[1]"; empty at the top level).
  MapReader(const Node* node, std::string path, const Where& fallback);

  const Where& where() const { return at_; }
  const std::string& path() const { return path_; }
  std::string key_path(std::string_view key) const;

  // The value of `key`, or nullptr when absent; the key counts as known either way.
  const Node* find(std::string_view key) const;
  // The value of a required key; a missing key is an error expecting `expected`.
  const Node& require(std::string_view key, std::string_view expected) const;
  // Throws at the first key that is not one of `known` (the schema of a section, checked before
  // any value is read so a misspelling is reported as such).
  void allow_only(const std::vector<std::string>& known) const;
  // Throws at the first key that was never asked for.
  void finish() const;

  bool has(std::string_view key) const override;
  double number(std::string_view key, double fallback, double lo, double hi) const override;
  int integer(std::string_view key, int fallback, int lo, int hi) const override;
  bool boolean(std::string_view key, bool fallback) const override;
  std::vector<double> vector(std::string_view key, std::vector<double> fallback, std::size_t size) const override;
  std::vector<double> matrix(std::string_view key, int rows, int cols) const override;
  std::array<int, 2> shape(std::string_view key) const override;
  std::string string(std::string_view key, std::string fallback) const override;
  std::string path(std::string_view key) const override;
  [[noreturn]] void fail(std::string_view key, std::string expected, std::string found) const override;

 private:
  [[noreturn]] void unknown_key(const Entry& e, const std::vector<std::string>& known) const;
  const std::vector<Entry>& entries() const;

  const Node* node_;
  std::string path_;
  Where at_;
  mutable std::vector<std::string> asked_;
};

// Resolves `text` against the directory of the file `node` came from; the result must name an
// existing regular file.
std::filesystem::path resolve_file(const Node& node, const std::string& path);

}  // namespace knot::problems::yaml
