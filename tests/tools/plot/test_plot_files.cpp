// plot_files (tools/knot/plot.cpp): runs tools/plot.py without a shell and returns the PNGs it wrote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "plot.hpp"

namespace fs = std::filesystem;
using knot::cli::plot_files;

namespace {

const fs::path kFixtures = KNOT_PLOT_FIXTURES;

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::path(KNOT_PLOT_WORK) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// A whole PNG: the signature first, the IEND chunk last, and more than 1 KB.
bool is_png(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string signature = "\x89PNG\r\n\x1a\n", end = std::string("IEND\xae\x42\x60\x82", 8);
  return data.size() > 1024 && data.compare(0, signature.size(), signature) == 0 &&
         data.compare(data.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

TEST(PlotFiles, WritesThePngsIntoAFolderOfAnyName) {
  // Quotes, spaces and shell syntax in the folder's name: it reaches the script as one argument.
  const fs::path out = fresh_folder("out 'a' \"b\" $(x) ;c");
  std::vector<std::string> pngs;
  const std::string why = plot_files({(kFixtures / "iiwa14_mpcgpu" / "trajectory.csv").string()}, out.string(), pngs);
  ASSERT_EQ(why, "");
  const std::vector<std::string> expected = {(out / "trajectory.png").string(), (out / "trajectory_path.png").string()};
  EXPECT_EQ(pngs, expected);
  for (const auto& p : pngs) EXPECT_TRUE(is_png(p)) << p;
}

TEST(PlotFiles, ACsvNamedLikeAnOptionIsAFile) {
  const fs::path dir = fresh_folder("dash");
  fs::copy_file(kFixtures / "cartpole_swingup" / "trajectory.csv", dir / "-trajectory.csv");
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  std::vector<std::string> pngs;
  const std::string why = plot_files({"-trajectory.csv"}, "", pngs);
  fs::current_path(cwd);
  ASSERT_EQ(why, "");
  ASSERT_EQ(pngs, std::vector<std::string>{"./-trajectory.png"});
  EXPECT_TRUE(is_png(dir / "-trajectory.png"));
}

TEST(PlotFiles, ReturnsTheScriptsMessage) {
  const fs::path out = fresh_folder("unknown");
  std::vector<std::string> pngs;
  const std::string why = plot_files({(kFixtures / "unknown_header.csv").string()}, out.string(), pngs);
  EXPECT_NE(why.find("unknown_header.csv: unknown CSV kind, header 'iteration,cost,stationarity'"), std::string::npos)
      << why;
  EXPECT_TRUE(pngs.empty());
  EXPECT_TRUE(fs::is_empty(out));
}

TEST(PlotFiles, NoFilesIsAnError) {
  std::vector<std::string> pngs;
  EXPECT_EQ(plot_files({}, "", pngs), "no CSV file to plot");
}
