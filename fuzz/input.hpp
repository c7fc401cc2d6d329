// The problem-file harnesses' input (fuzz_loader, fuzz_solve): optional leading lines
// "--set key.path=value" (at most 4) become overrides; the rest is the problem file.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace knot::fuzz {

struct ProblemInput {
  std::string_view text;
  std::vector<std::string> overrides;
};

inline ProblemInput split_input(const std::uint8_t* data, std::size_t size) {
  ProblemInput in{std::string_view(reinterpret_cast<const char*>(data), size), {}};
  constexpr std::string_view kSet = "--set ";
  while (in.overrides.size() < 4 && in.text.substr(0, kSet.size()) == kSet) {
    const std::size_t end = std::min(in.text.find('\n'), in.text.size());
    in.overrides.emplace_back(in.text.substr(kSet.size(), end - kSet.size()));
    in.text.remove_prefix(std::min(end + 1, in.text.size()));
  }
  return in;
}

}  // namespace knot::fuzz
