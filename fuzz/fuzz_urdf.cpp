// libFuzzer target for the URDF reader: load_urdf on arbitrary bytes, written to a file first (it
// reads a path, as a problem file's `urdf:` key gives it). ProblemError is the only exception it may
// throw at bad input; anything else escaping, a crash, a sanitizer report, a leak, a hang, or a
// model that breaks RobotModel's own invariants is a finding.
//
// Input: an optional first line "#ee=NAME" names the end-effector link; the rest is the URDF.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "knot/problems/error.hpp"
#include "knot/problems/robot/urdf.hpp"

namespace {

namespace fs = std::filesystem;

void remove_file();

const fs::path& input_file() {
  static const fs::path file = [] {
    const fs::path f = fs::temp_directory_path() / ("knot_fuzz_urdf_" + std::to_string(::getpid()) + ".urdf");
    std::atexit(remove_file);
    return f;
  }();
  return file;
}

void remove_file() {
  std::error_code ec;
  fs::remove(input_file(), ec);
}

// What every model load_urdf returns satisfies (robot/urdf.hpp, robot_data.hpp).
void check(const knot::problems::robot::RobotModel& m) {
  const auto& d = m.data;
  if (d.n < 1 || d.n > knot::problems::robot::kMaxJoints) std::abort();
  if (m.joint_names.size() != static_cast<std::size_t>(d.n)) std::abort();
  if (m.ee_frame < 0 || static_cast<std::size_t>(m.ee_frame) >= m.frames.size()) std::abort();
  for (const auto& f : m.frames)
    if (f.body < -1 || f.body >= d.n) std::abort();
  for (int j = 0; j < d.n; ++j) {
    if (!(d.mass[j] >= 0) || !std::isfinite(d.mass[j])) std::abort();
    if (std::isnan(d.q_lower[j]) || std::isnan(d.q_upper[j]) || !(d.q_lower[j] <= d.q_upper[j])) std::abort();
    if (!(d.velocity_limit[j] > 0) || !(d.effort_limit[j] > 0)) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string ee;
  constexpr std::string_view kEe = "#ee=";
  if (text.substr(0, kEe.size()) == kEe) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    ee = std::string(text.substr(kEe.size(), end - kEe.size()));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  {
    std::ofstream out(input_file(), std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out) std::abort();  // the harness's own failure, not a finding in the reader
  }
  try {
    check(knot::problems::robot::load_urdf(input_file().string(), ee));
  } catch (const knot::problems::ProblemError&) {
  }
  return 0;
}
