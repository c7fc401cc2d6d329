// Text helpers for error messages, shared by the loader, the registry and the terms (internal).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace knot::problems::text {

// Shortest text that reads back to the same double (1, 0.05, 1e-08, inf, nan).
std::string format_number(double v);
// Optimal-string-alignment distance (edits and adjacent transpositions), case-insensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);
// The candidate closest to `word` by edit distance, or empty when none is plausibly meant.
std::string closest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace knot::problems::text
