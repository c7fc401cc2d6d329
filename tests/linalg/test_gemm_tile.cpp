// gemm_tile against a naive triple loop: square sizes 1..40 and rectangular shapes, both op(B), the
// three shapes (Full, LowerC, LowerB), several alpha/beta. Operand padding and the parts a shape must
// not read are NaN; C is NaN where beta == 0; entries a shape must not write are checked untouched.
// gemm_tile_dynamic the same way at every m in 1..37 (each row tail) and n, k around the 4-column
// blocks, with guards before and after every operand (NaN in A and B, checked untouched in C).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "knot/linalg/dense/gemm_tile.hpp"
#include "test_util.hpp"

using namespace knot::linalg;
using namespace knot::test;

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr double kPad = -7.25;
const double kAlphaBeta[][2] = {{1.0, 0.0}, {-1.0, 1.0}, {0.7, -0.3}};

struct Case {
  int m, n, k, lda, ldb, ldc;
  Trans tb;
  TileShape shape;
  double alpha, beta;
  std::vector<double> A, B, C0;  // C0: C on entry
  int mr = 8;                    // the kernel's tile height (LowerC forms the tiles that reach the diagonal)
};

Case make_case(Rng& rng, int m, int n, int k, Trans tb, TileShape shape, double alpha, double beta) {
  Case c{m, n, k, m + 3, (tb == Trans::No ? k : n) + 2, m + 1, tb, shape, alpha, beta, {}, {}, {}};
  c.A.assign(static_cast<std::size_t>(c.lda) * k, kNaN);
  for (int p = 0; p < k; ++p)
    for (int i = 0; i < m; ++i) c.A[i + p * c.lda] = rng.uniform();
  const int brows = tb == Trans::No ? k : n, bcols = tb == Trans::No ? n : k;
  c.B.assign(static_cast<std::size_t>(c.ldb) * bcols, kNaN);
  for (int j = 0; j < bcols; ++j)
    for (int i = 0; i < brows; ++i) {
      const int p = tb == Trans::No ? i : j, col = tb == Trans::No ? j : i;  // op(B)(p, col)
      if (shape != TileShape::LowerB || p >= col) c.B[i + j * c.ldb] = rng.uniform();
    }
  c.C0.assign(static_cast<std::size_t>(c.ldc) * n, kPad);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) c.C0[i + j * c.ldc] = beta == 0.0 ? kNaN : rng.uniform();
  return c;
}

double op_b(const Case& c, int p, int j) {
  if (c.shape == TileShape::LowerB && p < j) return 0.0;
  return c.tb == Trans::No ? c.B[p + j * c.ldb] : c.B[j + p * c.ldb];
}

// Largest error of `got` relative to the rounding bound (K + 2) eps (|alpha| |A| |op(B)| + |beta C|),
// entry by entry, against the triple loop; NaN (fails every `<`) for a wrong untouched entry.
double error_ratio(const Case& c, const std::vector<double>& got) {
  double worst = 0.0;
  for (int j = 0; j < c.n; ++j) {
    for (int i = 0; i < c.ldc; ++i) {
      const std::size_t e = i + static_cast<std::size_t>(j) * c.ldc;
      if (i >= c.m) {  // padding: never written
        if (!bitwise_equal({got[e]}, {c.C0[e]})) return kNaN;
        continue;
      }
      double acc = 0.0, mag = 0.0;
      for (int p = 0; p < c.k; ++p) {
        acc += c.A[i + p * c.lda] * op_b(c, p, j);
        mag += std::abs(c.A[i + p * c.lda] * op_b(c, p, j));
      }
      const double c0 = c.beta == 0.0 ? 0.0 : c.C0[e];
      const double want = c.alpha * acc + c.beta * c0;
      const double bound = (c.k + 2) * kEps * (std::abs(c.alpha) * mag + std::abs(c.beta * c0)) + 1e-300;
      const bool covered = c.shape != TileShape::LowerC || i >= j / c.mr * c.mr;
      if (!covered) {
        if (!bitwise_equal({got[e]}, {c.C0[e]})) return kNaN;
        continue;
      }
      if (!std::isfinite(got[e])) return kNaN;
      worst = std::max(worst, std::abs(got[e] - want) / bound);
    }
  }
  return worst;
}

// The checks take the sizes and variant at run time and the kernel as a pointer to a thin template
// (call_tile, call_dynamic): only the kernels are instantiated per size, the checks once.
using TileFn = void (*)(double alpha, const double* A, int lda, const double* B, int ldb, double beta, double* C,
                        int ldc);
using DynamicFn = void (*)(int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb,
                           double beta, double* C, int ldc);

template <Trans TB, TileShape S, int M, int N, int K, int MR = 8>
void call_tile(double alpha, const double* A, int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  gemm_tile<TB, M, N, K, S, MR>(alpha, A, lda, B, ldb, beta, C, ldc);
}

void check(Rng& rng, Trans TB, TileShape S, int M, int N, int K, TileFn kernel, int mr = 8) {
  for (const auto& ab : kAlphaBeta) {
    Case c = make_case(rng, M, N, K, TB, S, ab[0], ab[1]);
    c.mr = mr;
    std::vector<double> C = c.C0;
    kernel(c.alpha, c.A.data(), c.lda, c.B.data(), c.ldb, c.beta, C.data(), c.ldc);
    EXPECT_LT(error_ratio(c, C), 1.0) << "m=" << M << " n=" << N << " k=" << K << " tb=" << static_cast<int>(TB)
                                      << " shape=" << static_cast<int>(S) << " alpha=" << c.alpha << " beta=" << c.beta;
  }
}

template <Trans TB, TileShape S, int... Ns>
void check_square(Rng& rng, std::integer_sequence<int, Ns...>) {
  (check(rng, TB, S, Ns + 1, Ns + 1, Ns + 1, call_tile<TB, S, Ns + 1, Ns + 1, Ns + 1>), ...);
}

template <Trans TB, TileShape S>
void check_all_square() {
  Rng rng(100 + 10 * static_cast<int>(TB) + static_cast<int>(S));
  check_square<TB, S>(rng, std::make_integer_sequence<int, 40>{});
}

TEST(GemmTile, FullSquare1To40) {
  check_all_square<Trans::No, TileShape::Full>();
  check_all_square<Trans::Yes, TileShape::Full>();
}

TEST(GemmTile, LowerCSquare1To40) {
  check_all_square<Trans::No, TileShape::LowerC>();
  check_all_square<Trans::Yes, TileShape::LowerC>();
}

TEST(GemmTile, LowerBSquare1To40) {
  check_all_square<Trans::No, TileShape::LowerB>();
  check_all_square<Trans::Yes, TileShape::LowerB>();
}

TEST(GemmTile, Rectangular) {
  Rng rng(7);
  check(rng, Trans::No, TileShape::Full, 36, 28, 28, call_tile<Trans::No, TileShape::Full, 36, 28, 28>);
  check(rng, Trans::No, TileShape::LowerB, 36, 28, 28, call_tile<Trans::No, TileShape::LowerB, 36, 28, 28>);
  check(rng, Trans::No, TileShape::LowerB, 35, 28, 28, call_tile<Trans::No, TileShape::LowerB, 35, 28, 28>);
  check(rng, Trans::Yes, TileShape::LowerB, 9, 5, 13, call_tile<Trans::Yes, TileShape::LowerB, 9, 5, 13>);
  check(rng, Trans::No, TileShape::Full, 7, 5, 3, call_tile<Trans::No, TileShape::Full, 7, 5, 3>);
  check(rng, Trans::Yes, TileShape::Full, 3, 7, 9, call_tile<Trans::Yes, TileShape::Full, 3, 7, 9>);
  check(rng, Trans::No, TileShape::Full, 40, 1, 13, call_tile<Trans::No, TileShape::Full, 40, 1, 13>);
  check(rng, Trans::Yes, TileShape::Full, 1, 40, 2, call_tile<Trans::Yes, TileShape::Full, 1, 40, 2>);
  check(rng, Trans::No, TileShape::Full, 28, 7, 28, call_tile<Trans::No, TileShape::Full, 28, 7, 28>);
  check(rng, Trans::Yes, TileShape::Full, 17, 9, 1, call_tile<Trans::Yes, TileShape::Full, 17, 9, 1>);
  check(rng, Trans::No, TileShape::Full, 12, 4, 0,
        call_tile<Trans::No, TileShape::Full, 12, 4, 0>);  // k = 0: C = beta C
}

// 12-row tiles (MR = 12: the square-root Riccati's Nm product): every row tail of 12 (M % 12 = 0..11),
// both op(B) and the three shapes.
template <Trans TB, TileShape S, int... Ms>
void check_rows12(Rng& rng, std::integer_sequence<int, Ms...>) {
  (check(rng, TB, S, Ms + 1, (S == TileShape::LowerC ? Ms + 1 : 7), Ms + 1,
         call_tile<TB, S, Ms + 1, (S == TileShape::LowerC ? Ms + 1 : 7), Ms + 1, 12>, 12),
   ...);
}

TEST(GemmTile, TwelveRowTiles) {
  Rng rng(9);
  constexpr auto rows = std::make_integer_sequence<int, 14>{};  // M = 1..14 with K = M (LowerB: K >= N = 7 from 7)
  check_rows12<Trans::No, TileShape::Full>(rng, rows);
  check_rows12<Trans::Yes, TileShape::Full>(rng, rows);
  check_rows12<Trans::No, TileShape::LowerC>(rng, rows);
  check(rng, Trans::No, TileShape::LowerB, 24, 21, 21, call_tile<Trans::No, TileShape::LowerB, 24, 21, 21, 12>, 12);
  check(rng, Trans::No, TileShape::LowerB, 36, 28, 28, call_tile<Trans::No, TileShape::LowerB, 36, 28, 28, 12>, 12);
  check(rng, Trans::No, TileShape::LowerB, 23, 14, 14, call_tile<Trans::No, TileShape::LowerB, 23, 14, 14, 12>, 12);
  check(rng, Trans::Yes, TileShape::LowerB, 29, 9, 13, call_tile<Trans::Yes, TileShape::LowerB, 29, 9, 13, 12>, 12);
  check(rng, Trans::No, TileShape::LowerC, 40, 40, 9, call_tile<Trans::No, TileShape::LowerC, 40, 40, 9, 12>, 12);
}

// The check rejects a product off by far less than the operands' size, an untouched entry and an
// op(B) read the wrong way round.
TEST(GemmTile, CheckCatchesWrongResults) {
  Rng rng(8);
  Case c = make_case(rng, 13, 13, 11, Trans::No, TileShape::Full, 1.0, 1.0);
  std::vector<double> C = c.C0;
  gemm_tile<Trans::No, 13, 13, 11>(1.0, c.A.data(), c.lda, c.B.data(), c.ldb, 1.0, C.data(), c.ldc);
  ASSERT_LT(error_ratio(c, C), 1.0);
  std::vector<double> bad = C;
  bad[5 + 7 * c.ldc] *= 1.0 + 1e-12;
  EXPECT_FALSE(error_ratio(c, bad) < 1.0);
  bad = C;
  bad[12 + 12 * c.ldc] = c.C0[12 + 12 * c.ldc];
  EXPECT_FALSE(error_ratio(c, bad) < 1.0);
  std::vector<double> wrong = c.C0;
  gemm_tile<Trans::Yes, 13, 13, 11>(1.0, c.A.data(), c.lda, c.B.data(), c.ldb, 1.0, wrong.data(), c.ldc);
  EXPECT_FALSE(error_ratio(c, wrong) < 1.0);
}

// ---- gemm_tile_dynamic

constexpr int kGuard = 8;  // entries before and after each operand

// The case's operands inside guards: NaN around A and B (a read of one reaches C as NaN), kPad
// around C (a write there is seen).
struct Guarded {
  std::vector<double> A, B, C;
  explicit Guarded(const Case& c) {
    auto wrap = [](const std::vector<double>& v, double fill) {
      std::vector<double> w(v.size() + 2 * kGuard, fill);
      std::copy(v.begin(), v.end(), w.begin() + kGuard);
      return w;
    };
    A = wrap(c.A, kNaN);
    B = wrap(c.B, kNaN);
    C = wrap(c.C0, kPad);
  }
  bool guards_intact() const {
    for (int g = 0; g < kGuard; ++g)
      if (!bitwise_equal({C[g], C[C.size() - 1 - g]}, {kPad, kPad})) return false;
    return true;
  }
  std::vector<double> c_inside() const { return {C.begin() + kGuard, C.end() - kGuard}; }
};

// Largest error ratio of gemm_tile_dynamic (Loop: of the plain loop that stands in for it without
// vector extensions) over the three alpha/beta pairs; NaN if a guard of C was written.
template <Trans TB, TileShape S, bool Loop, int MR = 8>
void call_dynamic(int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb, double beta,
                  double* C, int ldc) {
  if constexpr (Loop) {
    detail::gemm_tile_loop<TB, S>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  } else {
    gemm_tile_dynamic<TB, S, MR>(m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

double dynamic_error(Rng& rng, Trans TB, TileShape S, DynamicFn kernel, int m, int n, int k, int mr = 8) {
  double worst = 0.0;
  for (const auto& ab : kAlphaBeta) {
    Case c = make_case(rng, m, n, k, TB, S, ab[0], ab[1]);
    c.mr = mr;
    Guarded g(c);
    const double *A = g.A.data() + kGuard, *B = g.B.data() + kGuard;
    double* C = g.C.data() + kGuard;
    kernel(m, n, k, c.alpha, A, c.lda, B, c.ldb, c.beta, C, c.ldc);
    if (!g.guards_intact()) return kNaN;
    const double e = error_ratio(c, g.c_inside());
    if (!(e < 1.0)) return e;
    worst = std::max(worst, e);
  }
  return worst;
}

template <Trans TB, TileShape S, bool Loop = false>
double dynamic_error(Rng& rng, int m, int n, int k) {
  return dynamic_error(rng, TB, S, call_dynamic<TB, S, Loop>, m, n, k);
}

const int kSmall[] = {1, 3, 4, 5, 9};

template <Trans TB>
void check_dynamic_all(Rng& rng) {
  for (int m = 1; m <= 37; ++m) {
    SCOPED_TRACE(testing::Message() << "m " << m << " tb " << static_cast<int>(TB));
    for (const int n : kSmall) {
      for (const int k : {0, 1, 3, 4, 5, 9, 17})
        EXPECT_LT((dynamic_error<TB, TileShape::Full>(rng, m, n, k)), 1.0) << "Full n " << n << " k " << k;
      for (const int k : kSmall) {
        if (k < n) continue;  // LowerB needs k >= n
        EXPECT_LT((dynamic_error<TB, TileShape::LowerB>(rng, m, n, k)), 1.0) << "LowerB n " << n << " k " << k;
      }
    }
    for (const int n : {m, m + 1, m + 4}) EXPECT_LT((dynamic_error<TB, TileShape::Full>(rng, m, n, m)), 1.0) << n;
    for (const int k : kSmall) EXPECT_LT((dynamic_error<TB, TileShape::LowerC>(rng, m, m, k)), 1.0) << "LowerC k " << k;
    EXPECT_LT((dynamic_error<TB, TileShape::LowerB>(rng, m, m, m + 2)), 1.0) << "LowerB square";
  }
}

TEST(GemmTileDynamic, EveryRowTailAgainstTripleLoop) {
  Rng rng(21);
  check_dynamic_all<Trans::No>(rng);
  check_dynamic_all<Trans::Yes>(rng);
}

// 12-row tiles at run-time sizes: every m in 1..37 (each tail of 12), the three shapes.
TEST(GemmTileDynamic, TwelveRowTiles) {
  Rng rng(23);
  constexpr auto F = TileShape::Full, LB = TileShape::LowerB, LC = TileShape::LowerC;
  for (int m = 1; m <= 37; ++m) {
    SCOPED_TRACE(testing::Message() << "m " << m);
    for (const int n : {1, 4, 7}) {
      EXPECT_LT(dynamic_error(rng, Trans::No, F, call_dynamic<Trans::No, F, false, 12>, m, n, 9, 12), 1.0) << n;
      EXPECT_LT(dynamic_error(rng, Trans::Yes, F, call_dynamic<Trans::Yes, F, false, 12>, m, n, 9, 12), 1.0) << n;
      EXPECT_LT(dynamic_error(rng, Trans::No, LB, call_dynamic<Trans::No, LB, false, 12>, m, n, n + 3, 12), 1.0) << n;
    }
    EXPECT_LT(dynamic_error(rng, Trans::No, LC, call_dynamic<Trans::No, LC, false, 12>, m, m, 5, 12), 1.0);
  }
}

// The sizes of the Riccati recursion's products at state sizes outside its list (C nx x nx or
// nx x nu, k nx or nu).
TEST(GemmTileDynamic, RiccatiShapes) {
  Rng rng(22);
  for (const auto& [nx, nu] :
       {std::pair{18, 6}, std::pair{22, 3}, std::pair{27, 3}, std::pair{36, 12}, std::pair{40, 8}}) {
    SCOPED_TRACE(testing::Message() << "nx " << nx << " nu " << nu);
    EXPECT_LT((dynamic_error<Trans::No, TileShape::Full>(rng, nx, nx, nx)), 1.0);
    EXPECT_LT((dynamic_error<Trans::No, TileShape::Full>(rng, nx, nu, nx)), 1.0);
    EXPECT_LT((dynamic_error<Trans::No, TileShape::LowerC>(rng, nx, nx, nx)), 1.0);
    EXPECT_LT((dynamic_error<Trans::Yes, TileShape::LowerC>(rng, nx, nx, nu)), 1.0);
  }
}

// The fallback loop (nvcc, compilers without vector extensions) keeps the same contract.
TEST(GemmTileDynamic, FallbackLoopAgainstTripleLoop) {
  Rng rng(24);
  for (int m = 1; m <= 19; ++m) {
    SCOPED_TRACE(testing::Message() << "m " << m);
    EXPECT_LT((dynamic_error<Trans::No, TileShape::Full, true>(rng, m, 5, 9)), 1.0);
    EXPECT_LT((dynamic_error<Trans::Yes, TileShape::Full, true>(rng, m, 3, 4)), 1.0);
    EXPECT_LT((dynamic_error<Trans::No, TileShape::LowerC, true>(rng, m, m, 3)), 1.0);
    EXPECT_LT((dynamic_error<Trans::Yes, TileShape::LowerC, true>(rng, m, m, 9)), 1.0);
    EXPECT_LT((dynamic_error<Trans::No, TileShape::LowerB, true>(rng, m, 4, 9)), 1.0);
    EXPECT_LT((dynamic_error<Trans::Yes, TileShape::LowerB, true>(rng, m, 5, 5)), 1.0);
  }
}

// m or n zero writes nothing (C, all of it guard, stays as it was).
TEST(GemmTileDynamic, EmptyProductWritesNothing) {
  std::vector<double> A(16, 1.0), B(16, 1.0), C(16, kPad);
  for (const auto& [m, n] : {std::pair{0, 3}, std::pair{3, 0}, std::pair{0, 0}}) {
    gemm_tile_dynamic<Trans::No>(m, n, 2, 1.0, A.data(), 4, B.data(), 4, 0.0, C.data(), 4);
    EXPECT_TRUE(bitwise_equal(C, std::vector<double>(16, kPad))) << m << " " << n;
  }
}

// The check rejects a product that leaves the last row or column unformed, reads op(B) the wrong way
// round, or writes into a guard.
TEST(GemmTileDynamic, CheckCatchesWrongResults) {
  Rng rng(23);
  const int m = 21, n = 9, k = 7;  // n >= k: op(B) read the wrong way stays inside B
  const Case c = make_case(rng, m, n, k, Trans::No, TileShape::Full, 1.0, 0.0);  // C NaN on entry
  auto run = [&](int mm, int nn, bool swap_tb) {
    Guarded g(c);
    double* C = g.C.data() + kGuard;
    if (swap_tb) {
      gemm_tile_dynamic<Trans::Yes>(mm, nn, k, 1.0, g.A.data() + kGuard, c.lda, g.B.data() + kGuard, c.ldb, 0.0, C,
                                    c.ldc);
    } else {
      gemm_tile_dynamic<Trans::No>(mm, nn, k, 1.0, g.A.data() + kGuard, c.lda, g.B.data() + kGuard, c.ldb, 0.0, C,
                                   c.ldc);
    }
    return g;
  };
  const Guarded good = run(m, n, false);
  ASSERT_TRUE(good.guards_intact());
  ASSERT_LT(error_ratio(c, good.c_inside()), 1.0);
  EXPECT_FALSE(error_ratio(c, run(m - 1, n, false).c_inside()) < 1.0);
  EXPECT_FALSE(error_ratio(c, run(m, n - 1, false).c_inside()) < 1.0);
  EXPECT_FALSE(error_ratio(c, run(m, n, true).c_inside()) < 1.0);
  Guarded spill = good;
  spill.C[spill.C.size() - 1] = 0.0;
  EXPECT_FALSE(spill.guards_intact());
}

}  // namespace
