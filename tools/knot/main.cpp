// knot: the command-line front end. Subcommands: info, check, bench.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <spdlog/spdlog.h>

#include "commands.hpp"
#include "knot/build_info.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Knot: trajectory optimization and model predictive control"};
  app.set_version_flag("--version", std::string("knot ") + knot::build::kVersion);
  app.require_subcommand(1);

  auto* info = app.add_subcommand("info", "Version, build options, and whether a usable GPU is present");

  knot::cli::CheckOptions copt;
  auto* check = app.add_subcommand("check", "Validate a problem file and print the problem it resolves to");
  check->add_option("file", copt.file, "Problem file (YAML)")->required();
  check->add_option("--set", copt.overrides, "Override a key after extends: key.path=value (value parsed as YAML)")
      ->allow_extra_args(false);  // one key=value per --set; repeat --set for more

  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  knot::cli::BenchOptions bopt;
  auto* bench_linalg = bench->add_subcommand("linalg", "Block-tridiagonal and dense-block kernels against Eigen");
  bench_linalg->add_flag("--quick", bopt.quick, "Few sizes and repeats (seconds)");
  bench_linalg->add_option("--format", bopt.format, "Output format")->check(CLI::IsMember({"table", "csv", "json"}));
  bench_linalg->add_option("--repeats", bopt.repeats, "Timed repetitions per case (median reported)")->check(CLI::Range(1, 100000));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*info) return knot::cli::run_info();
    if (*check) return knot::cli::run_check(copt);
    if (*bench_linalg) return knot::cli::run_bench_linalg(bopt);
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 0;
}
