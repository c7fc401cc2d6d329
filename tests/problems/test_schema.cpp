// The problem-file schema suite (tests/problems/schema/):
//   invalid/*.yaml  each fails to load with the message fragment on its first line,
//                   `# expect: <file>:<line>:<column>: <key path>: expected ..., found ...`
//   valid/*.yaml    each loads to the dimensions on its first line, `# dims: nx=4 nu=1 N=20 ...`
// Fragments name the file without its directory, since the suite loads by absolute path.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "knot/problems/error.hpp"
#include "knot/problems/loader.hpp"
#include "source_tree.hpp"

namespace {

namespace fs = std::filesystem;
using knot::problems::describe;
using knot::problems::load_problem;
using knot::problems::Problem;
using knot::problems::ProblemError;

const fs::path kSchema = knot::source_tree::schema_dir();

std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The text after `prefix` on the file's first line, trailing blanks removed; empty when absent.
std::string header(const fs::path& file, const std::string& prefix) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  if (line.rfind(prefix, 0) != 0) return {};
  line.erase(0, prefix.size());
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line;
}

std::string test_name(const testing::TestParamInfo<fs::path>& info) {
  std::string s = info.param.stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

// The fragment's leading "<file>:<line>:<column>: ".
struct Position {
  std::string file;
  int line = 0, column = 0;
};
bool parse_position(const std::string& fragment, Position& out) {
  static const std::regex re(R"(^([^:/ ]+):(\d+):(\d+): )");
  std::smatch m;
  if (!std::regex_search(fragment, m, re)) return false;
  out = {m[1].str(), std::stoi(m[2].str()), std::stoi(m[3].str())};
  return true;
}

bool matches(const std::string& message, const std::string& fragment) {
  return !fragment.empty() && message.find(fragment) != std::string::npos;
}

// --- invalid files -----------------------------------------------------------------------------

class InvalidFile : public testing::TestWithParam<fs::path> {};

TEST_P(InvalidFile, FailsWithTheExpectedMessage) {
  const std::string fragment = header(GetParam(), "# expect: ");
  ASSERT_FALSE(fragment.empty()) << GetParam() << " has no '# expect: ' first line";
  Position pos;
  ASSERT_TRUE(parse_position(fragment, pos)) << "the fragment must start with file:line:column: " << fragment;
  ASSERT_GT(pos.line, 0);
  try {
    const Problem p = load_problem(GetParam());
    FAIL() << GetParam() << " loaded, as '" << p.name << "'";
  } catch (const ProblemError& e) {
    EXPECT_TRUE(matches(e.what(), fragment)) << "  message: " << e.what() << "\n  expected: " << fragment;
    // The structured position agrees with the text.
    EXPECT_EQ(fs::path(e.where().file).filename().string(), pos.file);
    EXPECT_EQ(e.where().line, pos.line);
    EXPECT_EQ(e.where().column, pos.column);
    EXPECT_FALSE(e.key_path().empty() && e.expected().empty());
    // Negative control: the same comparison rejects the message with the line moved by one.
    const std::string tag = pos.file + ":" + std::to_string(pos.line) + ":";
    std::string moved = e.what();
    if (const std::size_t at = moved.find(tag); at != std::string::npos)
      moved.replace(at, tag.size(), pos.file + ":" + std::to_string(pos.line + 1) + ":");
    EXPECT_FALSE(matches(moved, fragment)) << moved;
  }
}

INSTANTIATE_TEST_SUITE_P(Schema, InvalidFile, testing::ValuesIn(yaml_files(kSchema / "invalid")), test_name);

TEST(Schema, AtLeastThirtyInvalidFilesEachWithItsOwnMessage) {
  const auto files = yaml_files(kSchema / "invalid");
  EXPECT_GE(files.size(), 30u);
  // Distinct fragments: no two files test the same error at the same place.
  std::set<std::string> fragments;
  for (const auto& f : files) fragments.insert(header(f, "# expect: "));
  EXPECT_EQ(fragments.size(), files.size());
}

// --- valid files -------------------------------------------------------------------------------

class ValidFile : public testing::TestWithParam<fs::path> {};

TEST_P(ValidFile, LoadsToTheExpectedDimensions) {
  const std::string dims = header(GetParam(), "# dims: ");
  ASSERT_FALSE(dims.empty()) << GetParam() << " has no '# dims: ' first line";
  std::map<std::string, int> want;
  std::istringstream in(dims);
  for (std::string item; in >> item;) {
    const std::size_t eq = item.find('=');
    ASSERT_NE(eq, std::string::npos) << item;
    want[item.substr(0, eq)] = std::stoi(item.substr(eq + 1));
  }
  ASSERT_EQ(want.size(), 5u) << "expected nx, nu, N, costs and constraints: " << dims;

  const Problem p = load_problem(GetParam());
  EXPECT_EQ(p.nx(), want.at("nx"));
  EXPECT_EQ(p.nu(), want.at("nu"));
  EXPECT_EQ(p.horizon.N, want.at("N"));
  EXPECT_EQ(static_cast<int>(p.costs.size()), want.at("costs"));
  EXPECT_EQ(static_cast<int>(p.constraints.size()), want.at("constraints"));
  EXPECT_EQ(p.x0.size(), static_cast<std::size_t>(p.nx()));
  EXPECT_EQ(p.state_names.size(), static_cast<std::size_t>(p.nx()));
  EXPECT_EQ(p.control_names.size(), static_cast<std::size_t>(p.nu()));
  EXPECT_EQ(p.source, GetParam().string());
  EXPECT_NO_THROW(p.validate());
  EXPECT_NE(describe(p).find("problem      " + p.name + "\n"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Schema, ValidFile, testing::ValuesIn(yaml_files(kSchema / "valid")), test_name);

TEST(Schema, ValidFilesCoverTheRequiredModels) {
  std::set<std::string> types;
  for (const auto& f : yaml_files(kSchema / "valid")) types.insert(std::string(load_problem(f).model->type()));
  for (const char* t : {"double_integrator", "pendulum", "cartpole", "unicycle", "linear"})
    EXPECT_TRUE(types.count(t)) << t;
}

}  // namespace
