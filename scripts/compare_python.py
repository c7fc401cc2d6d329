#!/usr/bin/env python3
"""The cart-pole swing-up (configs/cartpole_swingup.yaml) solved by Knot, Crocoddyl and CasADi with
IPOPT, side by side: cost, iterations and time of each.

    PYTHONPATH=build/release/python python3 scripts/compare_python.py

The same NLP in all three: the file's cart-pole (M = 1, m = 0.1, l = 0.8, g = 9.81), RK4 over
dt = 0.05 with N = 20, the cost dt sum_k (0.5 x_k'Wx_k + 0.5 wu u_k^2) + 0.5 x_N'Wx_N, |F| <= 80,
from x_k = x0, u_k = 0. Crocoddyl (pip `pin==4.0.0` `crocoddyl==3.2.1`: a newer pin gives this
Crocoddyl wrong dynamics silently) runs Box-FDDP on a Python action model whose dynamics Jacobians
are central differences, so its time is mostly Python's; CasADi (pip `casadi`) hands IPOPT the
multiple-shooting NLP with exact derivatives. Each optional solver is skipped with one line when its
package is absent. Times are the fastest of three solves from the same start (the first pays for
imports and page faults); the last column is how far each optimum's controls are from Knot's (a
different local optimum shows as tens of newtons)."""

import pathlib
import time

import numpy as np

import knot

ROOT = pathlib.Path(__file__).resolve().parents[1]
M, m, L, G = 1.0, 0.1, 0.8, 9.81
N, DT, F_MAX = 20, 0.05, 80.0
WX = np.array([2000.0, 2000.0, 0.02, 0.02])
WU = 0.02
X0 = np.array([0.0, np.pi, 0.0, 0.0])


def f(x, u, sin=np.sin, cos=np.cos):
    s, c, w2 = sin(x[1]), cos(x[1]), x[3] * x[3]
    d = M + m - m * c * c
    return [x[2], x[3], (-m * L * s * w2 + m * G * c * s + u) / d, (-m * L * c * s * w2 + u * c + (M + m) * G * s) / (L * d)]


def rk4(x, u, fn):
    k1 = fn(x, u)
    k2 = fn([x[i] + 0.5 * DT * k1[i] for i in range(4)], u)
    k3 = fn([x[i] + 0.5 * DT * k2[i] for i in range(4)], u)
    k4 = fn([x[i] + DT * k3[i] for i in range(4)], u)
    return [x[i] + DT / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(4)]


def cost_of(xs, us):
    xs, us = np.asarray(xs), np.asarray(us).reshape(N, 1)
    running = DT * (0.5 * (xs[:N] ** 2 @ WX) + 0.5 * WU * us[:, 0] ** 2).sum()
    return running + 0.5 * xs[N] ** 2 @ WX


def solve_knot():
    problem = knot.load(ROOT / "configs" / "cartpole_swingup.yaml")
    solver = knot.Solver(problem)
    t0 = time.perf_counter()
    status = solver.solve()
    seconds = time.perf_counter() - t0
    return solver.solution.cost, solver.solution.iterations, seconds, status.label, np.array(solver.solution.u)


def solve_crocoddyl():
    import crocoddyl

    class CartpoleRk4(crocoddyl.ActionModelAbstract):
        def __init__(self, terminal):
            crocoddyl.ActionModelAbstract.__init__(self, crocoddyl.StateVector(4), 1, 0)
            self.terminal = terminal
            self.u_lb, self.u_ub = np.array([-F_MAX]), np.array([F_MAX])

        def step(self, x, u):
            return np.array(rk4(list(x), u, f))

        def calc(self, data, x, u=None):
            if self.terminal or u is None:
                data.xnext = x.copy()
                data.cost = 0.5 * float(x ** 2 @ WX)
            else:
                data.xnext = self.step(x, u[0])
                data.cost = DT * (0.5 * float(x ** 2 @ WX) + 0.5 * WU * float(u[0]) ** 2)

        def calcDiff(self, data, x, u=None):
            self.calc(data, x, u)
            if self.terminal or u is None:
                data.Lx, data.Lxx = WX * x, np.diag(WX)
                return
            eps = 1e-6
            Fx = np.zeros((4, 4))
            for j in range(4):
                e = np.zeros(4)
                e[j] = eps
                Fx[:, j] = (self.step(x + e, u[0]) - self.step(x - e, u[0])) / (2 * eps)
            Fu = ((self.step(x, u[0] + eps) - self.step(x, u[0] - eps)) / (2 * eps)).reshape(4, 1)
            data.Fx, data.Fu = Fx, Fu
            data.Lx, data.Lu = DT * WX * x, np.array([DT * WU * u[0]])
            data.Lxx, data.Luu, data.Lxu = DT * np.diag(WX), np.array([[DT * WU]]), np.zeros((4, 1))

    running, terminal = CartpoleRk4(False), CartpoleRk4(True)
    problem = crocoddyl.ShootingProblem(X0, [running] * N, terminal)
    solver = crocoddyl.SolverBoxFDDP(problem)
    solver.th_stop = 1e-12
    t0 = time.perf_counter()
    converged = solver.solve([X0.copy() for _ in range(N + 1)], [np.zeros(1) for _ in range(N)], 500)
    seconds = time.perf_counter() - t0
    us = np.array(solver.us)
    return cost_of(solver.xs, us), solver.iter, seconds, "converged" if converged else "not converged", us


def solve_casadi():
    import casadi as ca

    opti = ca.Opti()
    X, U = opti.variable(4, N + 1), opti.variable(1, N)
    cas_f = lambda x, u: f(x, u, ca.sin, ca.cos)  # noqa: E731
    opti.subject_to(X[:, 0] == X0)
    for k in range(N):
        opti.subject_to(X[:, k + 1] == ca.vertcat(*rk4([X[i, k] for i in range(4)], U[0, k], cas_f)))
    opti.subject_to(opti.bounded(-F_MAX, U, F_MAX))
    W = ca.DM(WX)
    J = sum(DT * (0.5 * ca.dot(W, X[:, k] ** 2) + 0.5 * WU * U[0, k] ** 2) for k in range(N))
    opti.minimize(J + 0.5 * ca.dot(W, X[:, N] ** 2))
    opti.set_initial(X, np.tile(X0.reshape(4, 1), (1, N + 1)))
    opti.set_initial(U, 0)
    opti.solver("ipopt", {"print_time": False}, {"print_level": 0, "tol": 1e-10, "sb": "yes"})
    t0 = time.perf_counter()
    sol = opti.solve()
    seconds = time.perf_counter() - t0
    stats = opti.stats()
    us = np.array(sol.value(U)).reshape(N, 1)
    return float(sol.value(opti.f)), stats["iter_count"], seconds, stats["return_status"], us


def best_of(fn, repeats=3):
    runs = [fn() for _ in range(repeats)]
    fastest = min(r[2] for r in runs)
    return runs[-1][:2] + (fastest,) + runs[-1][3:]


def main():
    results = {"knot": best_of(solve_knot)}
    for name, fn, package in [("crocoddyl", solve_crocoddyl, "crocoddyl"), ("casadi+ipopt", solve_casadi, "casadi")]:
        try:
            __import__(package)
        except ImportError:
            print(f"{name}: skipped ({package} is not installed: pip install {package})")
            continue
        results[name] = best_of(fn)
    u_knot = results["knot"][4]
    print(f"{'solver':<14} {'cost':>18} {'iterations':>10} {'time':>11}  {'max |u - u_knot|':>16}  status")
    for name, (cost, iterations, seconds, status, us) in results.items():
        print(f"{name:<14} {cost:>18.10f} {iterations:>10d} {1e3 * seconds:>8.2f} ms  "
              f"{np.abs(us - u_knot).max():>16.3e}  {status}")


if __name__ == "__main__":
    main()
