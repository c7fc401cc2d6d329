// Errors in user input (problem files, parameters, overrides).
//
// Every error names where it is (file, line, column), the key path (`costs[1].weights`), what was
// expected and what was found, so a user can fix the file without reading Knot's source.
#pragma once

#include <stdexcept>
#include <string>

namespace knot::problems {

// 1-based line and column; 0 when unknown (a problem built in C++, or a --set override).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
};

class ProblemError : public std::runtime_error {
 public:
  // Message: "<file>:<line>:<column>: <key_path>: expected <expected>, found <found>[ (<hint>)]".
  ProblemError(SourceLocation where, std::string key_path, std::string expected, std::string found,
               std::string hint = {});

  const SourceLocation& where() const { return where_; }
  const std::string& key_path() const { return key_path_; }
  const std::string& expected() const { return expected_; }
  const std::string& found() const { return found_; }

 private:
  SourceLocation where_;
  std::string key_path_, expected_, found_;
};

}  // namespace knot::problems
