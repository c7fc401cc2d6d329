// The knot subcommands. Each returns the process exit code.
#pragma once

#include <string>

namespace knot::cli {

int run_info();

struct BenchOptions {
  bool quick = false;
  std::string format = "table";  // table | csv | json
  int repeats = 0;               // 0: the default for the mode
};
int run_bench_linalg(const BenchOptions& opt);

}  // namespace knot::cli
