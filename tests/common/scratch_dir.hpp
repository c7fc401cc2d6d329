// A scratch directory per test binary for the files a test writes (URDFs for the error paths),
// removed when the run ends. The process id in its name keeps suites that ctest runs in parallel
// apart.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace knot::test {

inline std::filesystem::path scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("knot_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes `text` to scratch_dir()/name and returns the path.
inline std::string write_scratch_file(const std::string& name, const std::string& text) {
  const auto path = scratch_dir() / name;
  std::ofstream(path) << text;
  return path.string();
}

namespace detail {
class RemoveScratchDir final : public ::testing::Environment {
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(scratch_dir(), ec);
  }
};
inline ::testing::Environment* const kRemoveScratchDir = ::testing::AddGlobalTestEnvironment(new RemoveScratchDir);
}  // namespace detail

}  // namespace knot::test
