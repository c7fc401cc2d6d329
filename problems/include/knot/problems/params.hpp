// The parameters a model, cost or constraint factory reads, independent of where they come from.
//
// The YAML loader implements ParamReader over a mapping node (errors carry file positions and the
// key path); ParamMap is the in-memory form for C++ users and tests. A factory asks for each key it
// knows, with its default and valid range; the reader records what was asked, so the loader can
// report any key left over as unknown, with the closest known name as a suggestion.
#pragma once

#include <array>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace knot::problems {

class ParamReader {
 public:
  virtual ~ParamReader() = default;

  virtual bool has(std::string_view key) const = 0;
  // A finite number in [lo, hi]; `fallback` when the key is absent.
  virtual double number(std::string_view key, double fallback, double lo = -std::numeric_limits<double>::max(),
                        double hi = std::numeric_limits<double>::max()) const = 0;
  virtual int integer(std::string_view key, int fallback, int lo, int hi) const = 0;
  virtual bool boolean(std::string_view key, bool fallback) const = 0;
  // A list of finite numbers; `size` 0 accepts any length. `fallback` when absent.
  virtual std::vector<double> vector(std::string_view key, std::vector<double> fallback, std::size_t size = 0) const = 0;
  // A rows x cols matrix written as a list of rows; returned column-major. Required (no fallback).
  virtual std::vector<double> matrix(std::string_view key, int rows, int cols) const = 0;
  // {rows, cols} of a matrix value as written (cols from its first row), so a factory can take a
  // dimension from the data; {0, 0} when absent or not a list of rows. matrix() still validates.
  virtual std::array<int, 2> shape(std::string_view key) const = 0;
  virtual std::string string(std::string_view key, std::string fallback) const = 0;
  // A file path, resolved relative to the problem file; the file must exist. Required.
  virtual std::string path(std::string_view key) const = 0;
  // Reports a value the factory rejects for a reason the typed getters cannot see (throws ProblemError).
  [[noreturn]] virtual void fail(std::string_view key, std::string expected, std::string found) const = 0;
};

// In-memory parameters: numbers, vectors (matrices as row-major lists with `rows`), strings.
// Errors name the key under `context` (e.g. "model.params") with no file position.
class ParamMap final : public ParamReader {
 public:
  explicit ParamMap(std::string context = "params") : context_(std::move(context)) {}
  ParamMap& set(std::string key, double v);
  ParamMap& set(std::string key, std::vector<double> v);
  ParamMap& set(std::string key, std::string v);
  ParamMap& set_matrix(std::string key, int rows, int cols, std::vector<double> row_major);

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
  struct Value {
    std::vector<double> numbers;
    int rows = 0, cols = 0;  // set for matrices
    std::string text;
    bool is_text = false;
  };
  std::string context_;
  std::map<std::string, Value, std::less<>> values_;
};

}  // namespace knot::problems
