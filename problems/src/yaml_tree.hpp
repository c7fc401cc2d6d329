// Private to the loader: a YAML document as a plain tree whose every node remembers the file,
// line and column it came from.
//
// yaml-cpp's nodes lose their marks once copied or merged, and `extends` merges nodes from several
// files; so the loader converts each document into this tree once, merges and overrides trees,
// and reads values from them. Errors inside an extended parent name that parent's file.
#pragma once

#include "text.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "knot/problems/error.hpp"

namespace knot::problems::yaml {

// Where a document came from: its name in messages and the directory its relative paths resolve
// against.
struct Source {
  std::string name;
  std::filesystem::path dir;
};

struct Where {
  std::shared_ptr<const Source> source;
  int line = 0;  // 1-based; 0 when the text has no position (a --set override)
  int column = 0;
  SourceLocation location() const;
};

struct Entry;

struct Node {
  enum class Kind { Null, Scalar, Sequence, Map };
  Kind kind = Kind::Null;
  std::string text;            // Scalar
  bool plain = true;           // false for a quoted or explicitly tagged scalar: then never a number or bool
  // Scalar: character i of `text` is at column at.column + text_shift + i of line at.line (0 for a
  // plain scalar, 1 past an opening quote), when the text is written on that one line as is; -1
  // when it is not (folded over lines, with escapes, a block scalar).
  int text_shift = -1;
  std::vector<Node> items;     // Sequence
  std::vector<Entry> entries;  // Map, in file order (keys are unique)
  Where at;

  bool is_null() const { return kind == Kind::Null; }
  bool is_scalar() const { return kind == Kind::Scalar; }
  bool is_sequence() const { return kind == Kind::Sequence; }
  bool is_map() const { return kind == Kind::Map; }
  const Entry* find(std::string_view key) const;
  Entry* find(std::string_view key);
};

struct Entry {
  std::string key;
  Where key_at;
  Node value;
};

// Limits that keep a hostile document from exhausting memory through aliases (yaml-cpp shares an
// aliased node; the tree copies it) or from recursing without bound.
inline constexpr std::size_t kMaxNodes = 500'000;
inline constexpr int kMaxDepth = 64;
inline constexpr std::uintmax_t kMaxFileBytes = 64u << 20;

// Parses one YAML document. NUL bytes, control characters, a UTF-16 byte-order mark, a scalar
// that is not UTF-8, an unterminated quoted string, bad syntax, several documents, duplicate keys, non-scalar keys,
// recursive aliases and the limits above throw ProblemError. An empty text gives a Null node.
Node parse(std::string_view text, const std::shared_ptr<const Source>& source);

// Sets `at` on `node` and everything below it (override values have no position of their own).
void relocate(Node& node, const Where& at);

// Deep merge for `extends`: maps merge key by key (the child's value wins), anything else replaces.
void merge_into(Node& base, Node&& child);

// Reads a whole regular file (at most kMaxFileBytes); errors name `key_path` at `at`.
std::string read_file(const std::filesystem::path& file, const Where& at, const std::string& key_path);

// --- scalars -----------------------------------------------------------------------------------

enum class NumberClass { NotANumber, Finite, Infinite, NaN, OutOfRange };
struct Number {
  NumberClass cls = NumberClass::NotANumber;
  double value = 0;
};
// YAML 1.2 core-schema numbers: 12, -1.5e3, .5, .inf, -.Inf, .nan. Nothing else (no "inf", no hex).
Number parse_number(std::string_view text);
// Decimal integers only ([-+]?[0-9]+); false when not one or out of the range of long long.
bool parse_integer(std::string_view text, long long& out);

// The offset of the first byte of `s` that does not begin a valid UTF-8 sequence (overlong forms and
// surrogates included), or npos when `s` is valid UTF-8.
std::size_t utf8_error(std::string_view s);

// How a node reads in a message: 0.5, 'abc', "quoted", a list of 3 items, a mapping, nothing.
std::string found(const Node& node);
using text::format_number;
// `text` quoted for a message, cut short when long.
std::string quote(std::string_view text);

using text::closest;
// "a, b or c".
std::string join_alternatives(const std::vector<std::string>& words);

}  // namespace knot::problems::yaml
