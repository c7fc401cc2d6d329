// Where the knot command's files go, and the exit codes every subcommand shares.
//
// Every output file is written whole or not at all: the contents go to a temporary file in the
// target's folder, which is flushed and renamed over the target, so a reader never sees half a
// file and a failed write leaves any previous file untouched. The path "-" means stdout.
#pragma once

#include <string>
#include <string_view>

namespace knot::cli {

// The exit codes of every subcommand (documented in `knot --help` and the README).
enum ExitCode : int {
  kExitSolved = 0,    // success (solved; checked; closed loop ran)
  kExitInput = 1,     // invalid input or usage: a problem file, an option, an unwritable output
  kExitNotSolved = 2, // the solver ran and stopped short of Solved (the status is in the output)
  kExitInternal = 3,  // a bug or an unexpected exception: report it
};

// Writes `contents` to `path` atomically, or to stdout when path is "-". Returns an empty string on
// success, else the reason ("cannot create a file in 'dir': Permission denied"), naming the path.
std::string write_output(const std::string& path, std::string_view contents);

// Creates the folder (and its parents) for --out DIR. Empty string on success, else the reason.
std::string make_output_dir(const std::string& dir);

}  // namespace knot::cli
