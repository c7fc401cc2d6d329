// knot bench linalg: medians of repeated timings, Knot against Eigen, side by side in one run.
// Google Benchmark (tools/bench) holds the exhaustive version; this is the quick, readable one.
#include <Eigen/SparseCholesky>
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <fmt/core.h>
#include <functional>
#include <string>
#include <vector>

#include "blocktri_problem.hpp"
#include "commands.hpp"
#include "report.hpp"
#include "knot/linalg/bdsv.hpp"
#include "knot/linalg/dense/potrf.hpp"
#include "knot/linalg/dense/trsm.hpp"
#include "knot/linalg/pcg.hpp"
#include "knot/linalg/precond.hpp"

namespace knot::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Median over `repeats` of the mean time of one call, in microseconds. Each repeat runs the call
// enough times to last about 2 ms, so the clock resolution does not matter.

double median_us(int repeats, const std::function<void()>& call) {
  auto t0 = Clock::now();
  call();
  const double once = std::chrono::duration<double>(Clock::now() - t0).count();
  const int inner = std::max(1, static_cast<int>(2e-3 / std::max(once, 1e-9)));
  std::vector<double> samples;
  for (int r = 0; r < repeats; ++r) {
    t0 = Clock::now();
    for (int i = 0; i < inner; ++i) call();
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / inner);
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

struct Row {
  std::string group, case_name, knot_name;
  double knot_us;
  std::string ref_name;
  double ref_us;
  std::string note;
};

void print(const std::vector<Row>& rows, const std::string& format) {
  if (format == "csv") {
    fmt::print("group,case,knot,knot_us,reference,reference_us,speedup,note\n");
    for (const auto& r : rows)
      fmt::print("{},{},{},{:.4f},{},{:.4f},{:.3f},{}\n", csv_field(r.group), csv_field(r.case_name),
                 csv_field(r.knot_name), r.knot_us, csv_field(r.ref_name), r.ref_us, r.ref_us / r.knot_us,
                 csv_field(r.note));
    return;
  }
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows)
      out.push_back({{"group", r.group}, {"case", r.case_name}, {"knot", r.knot_name}, {"knot_us", json_number(r.knot_us)},
                     {"reference", r.ref_name}, {"reference_us", json_number(r.ref_us)},
                     {"speedup", json_number(r.ref_us / r.knot_us)}, {"note", r.note}});
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{:<8} {:<14} {:<16} {:>11}  {:<24} {:>11}  {:>8}  {}\n", "group", "case", "knot", "knot [us]", "reference",
             "ref [us]", "speedup", "note");
  for (const auto& r : rows)
    fmt::print("{:<8} {:<14} {:<16} {:11.3f}  {:<24} {:11.3f}  {:7.2f}x  {}\n", r.group, r.case_name, r.knot_name,
               r.knot_us, r.ref_name, r.ref_us, r.ref_us / r.knot_us, r.note);
}

double max_diff(const std::vector<double>& padded, const Eigen::VectorXd& x, int bs) {
  double m = 0;
  for (int i = 0; i < x.size(); ++i) m = std::max(m, std::abs(padded[bs + i] - x(i)));
  return m;
}

std::string formatted(const char* f, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// bdsv with the block size fixed at compile time for the benchmarked sizes, else at run time.
template <int BS = linalg::kDynamic>
void bdsv_sized(int nb, int bs, std::vector<double>& strips, std::vector<double>& v) {
  linalg::SerialGroup g;
  if constexpr (BS == linalg::kDynamic) {
    switch (bs) {
      case 4: return bdsv_sized<4>(nb, bs, strips, v);
      case 7: return bdsv_sized<7>(nb, bs, strips, v);
      case 14: return bdsv_sized<14>(nb, bs, strips, v);
      case 28: return bdsv_sized<28>(nb, bs, strips, v);
      default: break;
    }
  }
  linalg::bdsv<false, BS>(g, nb, bs, strips.data(), v.data());
}

void bench_bdsv(int bs, int nb, int repeats, std::vector<Row>& rows) {
  const auto p = knot::bench::make_blocktri(nb, bs);
  std::vector<double> strips, v;
  linalg::SerialGroup g;
  // The strip copy is inside Knot's timed call (bdsv factors in place); Eigen only reads its input.
  const double dyn_us = median_us(repeats, [&] {
    strips = p.strips;
    v = p.rhs;
    linalg::bdsv(g, nb, bs, strips.data(), v.data());
  });
  const double knot_us = median_us(repeats, [&] {
    strips = p.strips;
    v = p.rhs;
    bdsv_sized(nb, bs, strips, v);
  });
  Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> llt;
  llt.analyzePattern(p.sparse);
  Eigen::VectorXd x;
  const double fact_us = median_us(repeats, [&] {
    llt.factorize(p.sparse);
    x = llt.solve(p.b);
  });
  const std::string name = "bs=" + std::to_string(bs) + " nb=" + std::to_string(nb);
  const std::string note = formatted("max|dx| %.1e", max_diff(v, x, bs));
  rows.push_back({"bdsv", name, "bs fixed", knot_us, "SimplicialLLT factorize", fact_us, note});
  rows.push_back({"bdsv", name, "bs at run time", dyn_us, "SimplicialLLT factorize", fact_us, ""});
  const double comp_us = median_us(repeats, [&] {
    Eigen::SimplicialLLT<Eigen::SparseMatrix<double>> one(p.sparse);
    x = one.solve(p.b);
  });
  rows.push_back({"bdsv", name, "bs fixed", knot_us, "SimplicialLLT compute", comp_us, ""});
  if (nb * bs <= 1024) {
    Eigen::LLT<Eigen::MatrixXd> dense(p.dense.rows());
    const double dense_us = median_us(std::max(3, repeats / 4), [&] {
      dense.compute(p.dense);
      x = dense.solve(p.b);
    });
    rows.push_back({"bdsv", name, "bs fixed", knot_us, "dense LLT", dense_us, ""});
  }
}

void bench_pcg(int bs, int nb, int repeats, std::vector<Row>& rows) {
  // Block scales spanning two decades, so the preconditioners have something to do.
  const auto p = knot::bench::make_blocktri(nb, bs, 7, 2.0);
  std::vector<double> strips = p.strips, v = p.rhs;
  linalg::SerialGroup g;
  const double direct_us = median_us(repeats, [&] {
    strips = p.strips;
    v = p.rhs;
    bdsv_sized(nb, bs, strips, v);
  });
  std::vector<double> pinv(p.strips.size()), pscr(linalg::precond_scratch_size(bs));
  std::vector<double> work(linalg::pcg_scratch_size(nb, bs)), x(p.rhs.size());
  linalg::PcgOptions<double> opt;
  opt.rel_tol = 1e-20;  // on eta = r'z: about 1e-10 in the residual
  const char* names[] = {"pcg none", "pcg block-Jacobi", "pcg stair"};
  for (int pre = 0; pre < 3; ++pre) {
    if (pre == 1) linalg::precond_block_jacobi(g, nb, bs, p.strips.data(), pinv.data(), pscr.data());
    if (pre == 2) linalg::precond_stair(g, nb, bs, p.strips.data(), pinv.data(), pscr.data());
    opt.max_iters = pre == 0 ? 1000 : 5000;
    linalg::PcgResult res;
    const double us = median_us(repeats, [&] {
      std::fill(x.begin(), x.end(), 0.0);
      res = linalg::pcg(g, nb, bs, p.strips.data(), pre == 0 ? nullptr : pinv.data(), p.rhs.data(), x.data(), work.data(), opt);
    });
    const std::string note = std::to_string(res.iterations) + " iters" + (res.converged ? "" : " (not converged)") +
                             formatted(", max|x - x_bdsv| %.1e", max_diff(x, Eigen::Map<const Eigen::VectorXd>(v.data() + bs, nb * bs), bs));
    rows.push_back({"pcg", "bs=" + std::to_string(bs) + " nb=" + std::to_string(nb), names[pre], us, "bdsv (bs fixed)",
                    direct_us, note});
  }
}

template <int N>
void bench_dense(int repeats, std::vector<Row>& rows) {
  using MatN = Eigen::Matrix<double, N, N>;
  const MatN m = MatN::Random();
  const MatN a = m * m.transpose() + N * MatN::Identity();
  MatN work = a;
  linalg::SerialGroup g;
  const double knot_us = median_us(repeats, [&] {
    work = a;
    linalg::potrf<N>(g, N, work.data(), N);
  });
  Eigen::LLT<MatN> llt;
  const double eig_us = median_us(repeats, [&] { llt.compute(a); });
  const std::string name = "n=" + std::to_string(N);
  rows.push_back({"dense", name, "potrf", knot_us, "Eigen LLT<fixed> compute", eig_us,
                  formatted("max|L - L_eigen| %.1e", (MatN(work.template triangularView<Eigen::Lower>()) - MatN(llt.matrixL())).cwiseAbs().maxCoeff())});
  const MatN l = llt.matrixL();
  const MatN b = MatN::Random();
  MatN xk = b, xe = b;
  const double trsm_us = median_us(repeats, [&] {
    xk = b;
    linalg::trsm<linalg::Side::Left, linalg::Uplo::Lower, linalg::Trans::No, N, N>(g, N, N, 1.0, l.data(), N, xk.data(), N);
  });
  const double eig_trsm_us = median_us(repeats, [&] {
    xe = b;
    l.template triangularView<Eigen::Lower>().solveInPlace(xe);
  });
  rows.push_back({"dense", name, "trsm (N rhs)", trsm_us, "Eigen triangular solve", eig_trsm_us,
                  formatted("max|dx| %.1e", (xk - xe).cwiseAbs().maxCoeff())});
}

}  // namespace

int run_bench_linalg(const BenchOptions& opt) {
  const int repeats = opt.repeats > 0 ? opt.repeats : (opt.quick ? 7 : 21);
  std::vector<Row> rows;
  const std::vector<int> block_sizes = opt.quick ? std::vector<int>{14} : std::vector<int>{4, 7, 14, 28};
  const std::vector<int> block_rows = opt.quick ? std::vector<int>{64} : std::vector<int>{32, 64, 128};
  for (int bs : block_sizes)
    for (int nb : block_rows) bench_bdsv(bs, nb, repeats, rows);
  for (int bs : block_sizes)
    for (int nb : block_rows) bench_pcg(bs, nb, repeats, rows);
  bench_dense<4>(repeats, rows);
  bench_dense<7>(repeats, rows);
  bench_dense<14>(repeats, rows);
  if (opt.format == "table")
    fmt::print("knot bench linalg: median of {} repeats, one CPU thread (SerialGroup), speedup = reference / knot\n",
                repeats);
  print(rows, opt.format);
  return 0;
}

}  // namespace knot::cli
