// The knot subcommands. Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

namespace knot::cli {

int run_info();

struct BenchOptions {
  bool quick = false;
  std::string format = "table";  // table | csv | json
  int repeats = 0;               // 0: the default for the mode
};
int run_bench_linalg(const BenchOptions& opt);

struct CheckOptions {
  std::string file;
  std::vector<std::string> overrides;  // --set key.path=value, in order
};
// Exit 0 and the resolved problem on stdout when valid; 1 and the error on stderr otherwise.
int run_check(const CheckOptions& opt);

}  // namespace knot::cli
