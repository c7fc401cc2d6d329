// Figures for --plot: the knot program runs tools/plot.py on the CSV files it wrote.
//
// The script runs under the Python interpreter that CMake found able to import matplotlib, as a
// child process with an argument vector (no shell), so any path is passed as it is.
#pragma once

#include <string>
#include <vector>

namespace knot::cli {

// Runs the plot script on `csv_files` (trajectory.csv, closed_loop.csv or a bench CSV), writing the
// PNGs into `out_dir`, or beside each CSV when it is empty, and appends the paths of the PNGs it
// wrote to `pngs`. The script is share/knot/plot.py beside the installed program, else the source
// tree's tools/plot.py. Returns "" on success, else the reason: no interpreter with matplotlib, no
// script, or the script's own message (which names the file). The script's warnings go to stderr.
std::string plot_files(const std::vector<std::string>& csv_files, const std::string& out_dir,
                       std::vector<std::string>& pngs);

}  // namespace knot::cli
