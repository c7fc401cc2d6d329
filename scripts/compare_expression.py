#!/usr/bin/env python3
"""The expression cart-pole's dynamics and Jacobian (tests/data/expression/cartpole_swingup.yaml)
timed in Knot and in CasADi, side by side, with the ratio of each to Knot's expression model.

    python3 scripts/compare_expression.py [build/rel/tools/bench/knot_bench_expression]

Knot: the Dynamics/ and Jacobian/ entries of knot_bench_expression (the built-in model and the
expression model, f and [fx | fu] at one point, CPU time per call). CasADi (pip `casadi`): the same
expressions as an SX Function returning f, df/dx and df/du, timed two ways: interpreted (the SX
virtual machine, called through a map over many points so that Python's call overhead is spread
out) and as its generated C compiled with the system compiler (`cc -O3`) into a small driver that
calls it in a loop. Skipped with one line when casadi is missing; the generated-C column is skipped
when no C compiler is found."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
X = [0.3, 2.9, -0.4, 1.1]  # the bench's point (tools/bench/bench_expression.cpp)
U = [4.0]
M, m, L, G = 1.0, 0.1, 0.8, 9.81


def knot_times(bench):
    out = subprocess.run(
        [str(bench), "--benchmark_filter=^(Dynamics|Jacobian)/", "--benchmark_repetitions=5",
         "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    times = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            times[b["run_name"]] = b["cpu_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3}[b["time_unit"]]
    return times


def casadi_function(ca):
    x, u = ca.SX.sym("x", 4), ca.SX.sym("u", 1)
    p, theta, v, omega = x[0], x[1], x[2], x[3]
    s, c = ca.sin(theta), ca.cos(theta)
    denom = M + m - m * c * c
    f = ca.vertcat(v, omega, (-m * L * s * omega**2 + m * G * c * s + u) / denom,
                   (-m * L * c * s * omega**2 + u * c + (M + m) * G * s) / (L * denom))
    return ca.Function("cartpole", [x, u], [f, ca.jacobian(f, x), ca.jacobian(f, u)]), \
        ca.Function("cartpole_f", [x, u], [f])


def interpreted(ca, fn, points=20000):
    mapped = fn.map(points, "serial")
    xs, us = ca.repmat(ca.DM(X), 1, points), ca.repmat(ca.DM(U), 1, points)
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        mapped(xs, us)
        best = min(best, time.process_time() - start)
    return best / points


DRIVER = r"""
#include <stdio.h>
#include <time.h>
#include "gen.h"
int main(void) {
  const double x[4] = {%s}, u[1] = {%s};
  const double* arg[2] = {x, u};
  double out[4 + 16 + 4];
  double* res[3] = {out, out + 4, out + 20};
  casadi_int iw[64]; double w[256];
  const long n = %d;
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (long i = 0; i < n; ++i) {
      %s(arg, res, iw, w, 0);
      __asm__ volatile("" : : "r"(out) : "memory");
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double t = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
    if (t < best) best = t;
  }
  printf("%%.6e\n", best / n);
  return 0;
}
"""


def generated(fn, cc, calls=2000000):
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            fn.generate("gen.c", {"with_header": True})
        finally:
            os.chdir(cwd)
        name = fn.name()
        assert fn.sz_iw() <= 64 and fn.sz_w() <= 256
        with open(os.path.join(tmp, "main.c"), "w") as fh:
            fh.write(DRIVER % (", ".join(map(repr, X)), ", ".join(map(repr, U)), calls, name))
        exe = os.path.join(tmp, "driver")
        subprocess.run([cc, "-O3", "-o", exe, "main.c", "gen.c", "-lm"], cwd=tmp, check=True)
        return float(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)


def main():
    bench = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build/rel/tools/bench/knot_bench_expression"
    try:
        import casadi as ca
    except ImportError:
        print("casadi is not installed for this python (pip install casadi): comparison skipped")
        return
    if not bench.exists():
        sys.exit(f"{bench}: not found (build the knot_bench_expression target, KNOT_BUILD_BENCHMARKS=ON)")
    k = knot_times(bench)
    jac, dyn = casadi_function(ca)
    rows = [("Knot built-in model", k["Dynamics/builtin"], k["Jacobian/builtin"]),
            ("Knot expression model", k["Dynamics/expression"], k["Jacobian/expression"]),
            (f"CasADi {ca.__version__} SX, interpreted", interpreted(ca, dyn), interpreted(ca, jac))]
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc:
        rows.append(("CasADi SX, generated C (cc -O3)", generated(dyn, cc), generated(jac, cc)))
    else:
        print("no C compiler found: CasADi's generated C skipped")
    ref_f, ref_j = k["Dynamics/expression"], k["Jacobian/expression"]
    print(f"{'cart-pole f(x, u) and [fx | fu], CPU time per call':52s} {'f':>9s} {'ratio':>6s} {'f+J':>9s} {'ratio':>6s}")
    for name, tf, tj in rows:
        print(f"{name:52s} {tf * 1e9:7.1f}ns {tf / ref_f:6.2f} {tj * 1e9:7.1f}ns {tj / ref_j:6.2f}")
    print("ratio: the row's time over Knot's expression model's")


if __name__ == "__main__":
    main()
