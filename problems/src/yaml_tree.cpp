#include "yaml_tree.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace knot::problems::yaml {

SourceLocation Where::location() const { return SourceLocation{source ? source->name : std::string(), line, column}; }

const Entry* Node::find(std::string_view key) const {
  for (const Entry& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}

Entry* Node::find(std::string_view key) {
  for (Entry& e : entries)
    if (e.key == key) return &e;
  return nullptr;
}

namespace {

std::string hex_byte(char c) {
  static const char* digits = "0123456789abcdef";
  const auto b = static_cast<unsigned char>(c);
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// The file position of byte `offset` of `text` (columns count bytes, as yaml-cpp's marks do).
SourceLocation text_location(std::string_view text, std::size_t offset,
                             const std::shared_ptr<const Source>& source) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return SourceLocation{source->name, line, column};
}

// Builds the Node tree from yaml-cpp's parser events (not from YAML::Node, whose marks do not survive
// copies), checking what yaml-cpp lets through: duplicate keys, non-scalar keys, recursive aliases,
// and the size and depth limits.
class TreeBuilder final : public YAML::EventHandler {
 public:
  TreeBuilder(std::string_view text, const std::shared_ptr<const Source>& source) : text_(text), source_(source) {}

  // The document built by the last HandleNextDocument, and the mark of its first node.
  Node take_root() { return std::move(root_); }
  const YAML::Mark& root_mark() const { return root_mark_; }
  bool root_is_lone_null() const { return root_.is_null(); }

  void OnDocumentStart(const YAML::Mark&) override {
    stack_.clear();
    root_ = Node{};
    has_root_ = false;
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Node n = make(Node::Kind::Null, mark);
    finish(std::move(n), anchor, 1);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Node n = make(Node::Kind::Scalar, mark);
    n.text = value;
    n.plain = tag == "?";  // "!" for a quoted scalar, the tag itself for a tagged one
    if (!n.plain) check_closed(mark, n.at);
    n.text_shift = text_shift(mark, value);
    if (utf8_error(value) != std::string::npos) bad_utf8(mark);
    finish(std::move(n), anchor, 1);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const Where at = where(mark);
    for (const Frame& f : stack_)
      if (f.anchor == anchor)
        throw ProblemError(at.location(), child_path(), "a finite document", "an alias to an enclosing node");
    if (anchor >= anchors_.size() || !anchors_[anchor].node)
      throw ProblemError(at.location(), child_path(), "an alias to a defined anchor", "an undefined alias");
    const Anchored& a = anchors_[anchor];
    finish(Node(*a.node), 0, a.size);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(make(Node::Kind::Sequence, mark), anchor);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(make(Node::Kind::Map, mark), anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    Node node;
    YAML::anchor_t anchor = 0;
    std::string path;
    std::size_t size = 1;  // nodes in this subtree so far
    bool has_key = false;  // maps: the next node is the value of `key`
    Entry pending;
    std::unordered_map<std::string, int> keys;  // maps: key -> line, for duplicates
  };
  struct Anchored {
    std::shared_ptr<const Node> node;
    std::size_t size = 0;
  };

  // yaml-cpp takes the end of the text for the end of a quoted scalar that is never closed, so the
  // rest of the document becomes one string; look for the closing quote in the text itself.
  void check_closed(const YAML::Mark& mark, const Where& at) const {
    if (mark.pos < 0 || static_cast<std::size_t>(mark.pos) >= text_.size()) return;
    std::size_t i = static_cast<std::size_t>(mark.pos);
    while (i < text_.size() && (text_[i] == '!' || text_[i] == '&')) {  // a tag or anchor first: !tag 'text'
      while (i < text_.size() && text_[i] != ' ' && text_[i] != '\t') ++i;
      while (i < text_.size() && (text_[i] == ' ' || text_[i] == '\t')) ++i;
    }
    if (i >= text_.size() || (text_[i] != '"' && text_[i] != '\'')) return;  // a block scalar, say
    const char q = text_[i];
    for (++i; i < text_.size(); ++i) {
      if (q == '"' && text_[i] == '\\') {
        ++i;  // the escaped character, a quote included
      } else if (text_[i] == q) {
        if (q == '\'' && i + 1 < text_.size() && text_[i + 1] == '\'') {
          ++i;  // '' is a quote inside a single-quoted string
        } else {
          return;
        }
      }
    }
    const std::string kind = q == '"' ? "double-quoted" : "single-quoted";
    throw ProblemError(at.location(), child_path(), "a closing " + std::string(1, q) + " for the " + kind + " string",
                       "an unterminated string starting at line " + std::to_string(at.line) + " column " +
                           std::to_string(at.column));
  }

  // Node::text_shift: the value found as is at the mark (plain) or just past a quote there.
  int text_shift(const YAML::Mark& mark, const std::string& value) const {
    if (mark.pos < 0 || mark.line < 0 || value.find_first_of("\r\n") != std::string::npos) return -1;
    const std::size_t pos = static_cast<std::size_t>(mark.pos);
    const std::string_view rest = std::string_view(text_).substr(std::min(pos, text_.size()));
    if (rest.substr(0, value.size()) == value) return 0;
    if (!rest.empty() && (rest[0] == '"' || rest[0] == '\'') && rest.substr(1, value.size()) == value &&
        rest.size() > value.size() + 1 && rest[value.size() + 1] == rest[0])
      return 1;
    return -1;
  }

  // A scalar whose value is not UTF-8: the offending bytes are the first invalid ones in the text
  // from the scalar's start (escapes always produce valid UTF-8, so they came in raw).
  [[noreturn]] void bad_utf8(const YAML::Mark& mark) const {
    const std::size_t start = mark.pos < 0 ? 0 : std::min(static_cast<std::size_t>(mark.pos), text_.size());
    const std::size_t rel = utf8_error(text_.substr(start));
    const std::size_t at = rel == std::string::npos ? start : start + rel;
    throw ProblemError(text_location(text_, at, source_), child_path(), "valid UTF-8 text",
                       "the byte " + hex_byte(at < text_.size() ? text_[at] : 0) + ", which is not UTF-8 there");
  }

  Where where(const YAML::Mark& m) const {
    if (m.is_null() || m.line < 0) return Where{source_, 0, 0};
    return Where{source_, m.line + 1, m.column + 1};
  }

  Node make(Node::Kind kind, const YAML::Mark& mark) {
    Node n;
    n.kind = kind;
    n.at = where(mark);
    if (!has_root_) root_mark_ = mark;
    has_root_ = true;
    return n;
  }

  // The key path of the node about to be added ("costs[1].weights").
  std::string child_path() const {
    if (stack_.empty()) return {};
    const Frame& f = stack_.back();
    if (f.node.is_sequence()) return f.path + "[" + std::to_string(f.node.items.size()) + "]";
    if (!f.has_key) return f.path;
    return f.path.empty() ? f.pending.key : f.path + "." + f.pending.key;
  }

  void count(std::size_t n, const Where& at) {
    nodes_ += n;
    if (nodes_ > kMaxNodes)
      throw ProblemError(at.location(), child_path(), "a document of at most " + std::to_string(kMaxNodes) + " nodes",
                         "more (counting every use of an alias)");
  }

  void open(Node n, YAML::anchor_t anchor) {
    count(1, n.at);
    if (static_cast<int>(stack_.size()) >= kMaxDepth)
      throw ProblemError(n.at.location(), child_path(), "nesting at most " + std::to_string(kMaxDepth) + " levels deep",
                         "deeper nesting");
    Frame f;
    f.path = child_path();
    f.node = std::move(n);
    f.anchor = anchor;
    stack_.push_back(std::move(f));
  }

  void close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.node.is_map() && f.has_key)  // cannot happen after a well-formed map; keep the key anyway
      add_entry(f, Node{});
    place(std::move(f.node), f.anchor, f.size);
  }

  void finish(Node n, YAML::anchor_t anchor, std::size_t size) {
    count(size, n.at);
    place(std::move(n), anchor, size);
  }

  // Adds a completed node to its parent (or makes it the document), remembering it under its anchor.
  void place(Node n, YAML::anchor_t anchor, std::size_t size) {
    if (anchor != 0) {
      count(size, n.at);  // the copy kept for aliases costs as much as the node
      if (anchors_.size() <= anchor) anchors_.resize(anchor + 1);
      anchors_[anchor] = Anchored{std::make_shared<const Node>(n), size};
    }
    if (stack_.empty()) {
      root_ = std::move(n);
      return;
    }
    Frame& f = stack_.back();
    f.size += size;
    if (f.node.is_sequence()) {
      f.node.items.push_back(std::move(n));
    } else if (!f.has_key) {
      if (!n.is_scalar())
        throw ProblemError(n.at.location(), f.path, "a plain key name", n.is_null() ? "an empty key" : "a complex key");
      f.pending = Entry{n.text, n.at, Node{}};
      f.has_key = true;
    } else {
      add_entry(f, std::move(n));
    }
  }

  void add_entry(Frame& f, Node value) {
    Entry e = std::move(f.pending);
    f.has_key = false;
    const std::string path = f.path.empty() ? e.key : f.path + "." + e.key;
    if (auto [prev, inserted] = f.keys.emplace(e.key, e.key_at.line); !inserted)
      throw ProblemError(e.key_at.location(), path, "each key once per mapping", "a duplicate of the key",
                         "first at line " + std::to_string(prev->second));
    // A key without a value gets the mark of the next token; point at the key instead.
    if (value.is_null()) value.at = e.key_at;
    e.value = std::move(value);
    f.node.entries.push_back(std::move(e));
  }

  std::string_view text_;
  const std::shared_ptr<const Source>& source_;
  std::vector<Frame> stack_;
  std::vector<Anchored> anchors_;
  std::size_t nodes_ = 0;
  Node root_;
  YAML::Mark root_mark_ = YAML::Mark::null_mark();
  bool has_root_ = false;
};

SourceLocation mark_location(const std::shared_ptr<const Source>& source, const YAML::Mark& m) {
  if (m.is_null() || m.line < 0) return SourceLocation{source->name, 0, 0};
  return SourceLocation{source->name, m.line + 1, m.column + 1};
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }


// yaml-cpp misreads bytes a YAML stream may not contain: a NUL ends a line or starts an escape, a
// UTF-16 byte-order mark switches it to UTF-16. So they are refused before it sees them.
void check_bytes(std::string_view text, const std::shared_ptr<const Source>& source) {
  const auto u = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  if (text.size() >= 2 && ((u(0) == 0xff && u(1) == 0xfe) || (u(0) == 0xfe && u(1) == 0xff)))
    throw ProblemError(text_location(text, 0, source), "", "UTF-8 text", "a UTF-16 byte-order mark");
  for (std::size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = u(i);
    if (c == 0)
      throw ProblemError(text_location(text, i, source), "", "text without NUL bytes", "a NUL byte");
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
      throw ProblemError(text_location(text, i, source), "", "printable text",
                         "the control character " + hex_byte(text[i]));
  }
}

}  // namespace

std::size_t utf8_error(std::string_view s) {
  const auto u = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = u(i);
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte (RFC 3629's table)
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c == 0xe0) lo = 0xa0;       // no overlong forms
      else if (c == 0xed) hi = 0x9f;  // no surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c == 0xf0) lo = 0x90;
      else if (c == 0xf4) hi = 0x8f;  // nothing above U+10FFFF
    } else {
      return i;
    }
    if (i + len > s.size() || u(i + 1) < lo || u(i + 1) > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (u(i + k) < 0x80 || u(i + k) > 0xbf) return i;
    i += len;
  }
  return std::string_view::npos;
}

Node parse(std::string_view text, const std::shared_ptr<const Source>& source) {
  // A UTF-8 byte-order mark is not part of the document; yaml-cpp's marks do not count it either,
  // and the checks here use their positions in the text.
  if (text.substr(0, 3) == "\xef\xbb\xbf") text.remove_prefix(3);
  check_bytes(text, source);
  std::istringstream in{std::string(text)};
  TreeBuilder builder(text, source);
  Node root;
  root.at = Where{source, 1, 1};
  try {
    YAML::Parser parser(in);
    // At most two documents are asked for: yaml-cpp 0.7 can report an endless run of empty
    // documents at a token that cannot start a node (jbeder/yaml-cpp#1040), which LoadAll loops on.
    if (!parser.HandleNextDocument(builder)) return root;
    const bool first_is_null = builder.root_is_lone_null();
    const YAML::Mark first_mark = builder.root_mark();
    root = builder.take_root();
    if (parser.HandleNextDocument(builder)) {
      const YAML::Mark m = builder.root_mark();
      if (first_is_null && builder.root_is_lone_null() && m.pos == first_mark.pos) {
        const std::string at = m.pos >= 0 && static_cast<std::size_t>(m.pos) < text.size()
                                   ? quote(text.substr(static_cast<std::size_t>(m.pos), 1))
                                   : std::string("the end");
        throw ProblemError(mark_location(source, m), "", "valid YAML", at + " where no value can start");
      }
      throw ProblemError(mark_location(source, m), "", "one YAML document", "a second document");
    }
  } catch (const YAML::ParserException& e) {
    throw ProblemError(mark_location(source, e.mark), "", "valid YAML", e.msg);
  } catch (const YAML::Exception& e) {
    throw ProblemError(mark_location(source, e.mark), "", "valid YAML", e.msg);
  }
  return root;
}

void relocate(Node& node, const Where& at) {
  node.at = at;
  for (Node& item : node.items) relocate(item, at);
  for (Entry& e : node.entries) {
    e.key_at = at;
    relocate(e.value, at);
  }
}

void merge_into(Node& base, Node&& child) {
  if (!base.is_map() || !child.is_map()) {
    base = std::move(child);
    return;
  }
  for (Entry& e : child.entries) {
    if (Entry* b = base.find(e.key)) {
      b->key_at = e.key_at;
      merge_into(b->value, std::move(e.value));
    } else {
      base.entries.push_back(std::move(e));
    }
  }
  base.at = child.at;
}

std::string read_file(const std::filesystem::path& file, const Where& at, const std::string& key_path) {
  std::error_code ec;
  const std::string shown = quote(file.string());
  if (!std::filesystem::exists(file, ec))
    throw ProblemError(at.location(), key_path, "an existing file", shown + " (no such file)");
  if (!std::filesystem::is_regular_file(file, ec)) throw ProblemError(at.location(), key_path, "a regular file", shown);
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec || size > kMaxFileBytes)
    throw ProblemError(at.location(), key_path, "a file of at most " + std::to_string(kMaxFileBytes >> 20) + " MiB",
                       shown + (ec ? " (size unknown)" : " (" + std::to_string(size) + " bytes)"));
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw ProblemError(at.location(), key_path, "a readable file", shown);
  return std::move(text).str();
}

Number parse_number(std::string_view t) {
  if (t == ".nan" || t == ".NaN" || t == ".NAN") return {NumberClass::NaN, std::numeric_limits<double>::quiet_NaN()};
  std::string_view s = t;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == ".inf" || s == ".Inf" || s == ".INF") {
    const double inf = std::numeric_limits<double>::infinity();
    return {NumberClass::Infinite, negative ? -inf : inf};
  }
  // [0-9]+ ( . [0-9]* )? | . [0-9]+, then an optional exponent.
  std::size_t i = 0, int_digits = 0, frac_digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return {};
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return {};
  }
  if (i != s.size()) return {};
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc::result_out_of_range) return {NumberClass::OutOfRange, 0};
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return {};
  return {NumberClass::Finite, negative ? -v : v};
}

bool parse_integer(std::string_view t, long long& out) {
  std::string_view s = t;
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  const std::size_t first_digit = !s.empty() && s[0] == '-' ? 1 : 0;
  if (s.size() <= first_digit) return false;
  for (std::size_t i = first_digit; i < s.size(); ++i)
    if (!is_digit(s[i])) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string quote(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c == 0x7f)
      out += '?';
    else
      out += static_cast<char>(c);
  }
  if (text.size() > kMax) out += "...";
  return out + "'";
}

std::string found(const Node& node) {
  switch (node.kind) {
    case Node::Kind::Null:
      return "nothing";
    case Node::Kind::Scalar: {
      if (!node.plain) return "the string " + quote(node.text);
      long long i = 0;
      if (parse_number(node.text).cls != NumberClass::NotANumber || parse_integer(node.text, i)) return node.text;
      return quote(node.text);
    }
    case Node::Kind::Sequence:
      if (node.items.empty()) return "an empty list";
      return "a list of " + std::to_string(node.items.size()) + (node.items.size() == 1 ? " item" : " items");
    case Node::Kind::Map:
      return node.entries.empty() ? "an empty mapping" : "a mapping";
  }
  return "?";
}

std::string join_alternatives(const std::vector<std::string>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

}  // namespace knot::problems::yaml
