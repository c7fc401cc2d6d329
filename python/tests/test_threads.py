"""Two solvers on two Python threads at once (solve() releases the GIL) give the sequential results; one
solver's knots on several threads (the threads option) give the single thread's."""

import threading

import numpy as np

import knot
from conftest import ROOT

CONFIGS = ["cartpole_swingup", "iiwa14_reach"]


def run(name, repeats, out):
    problem = knot.load(ROOT / "configs" / f"{name}.yaml")
    solver = knot.Solver(problem)
    results = []
    for r in range(repeats):
        x0 = np.array(problem.x0)
        x0[0] += 1e-3 * r  # a different solve each time
        solver.set_initial_state(x0)
        solver.set_initial_guess(np.tile(x0, (solver.N + 1, 1)), np.zeros((solver.N, solver.nu)))
        status = solver.solve()
        results.append((status, solver.solution.cost, np.array(solver.solution.x)))
    out[name] = results


def test_two_threads_match_sequential_runs():
    sequential, threaded = {}, {}
    for name in CONFIGS:
        run(name, 5, sequential)
    threads = [threading.Thread(target=run, args=(name, 5, threaded)) for name in CONFIGS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in CONFIGS:
        assert len(threaded[name]) == 5
        for (s1, c1, x1), (s2, c2, x2) in zip(sequential[name], threaded[name]):
            assert s1 == s2 and c1 == c2 and np.array_equal(x1, x2)
    # Negative control: the repeats differ from one another, so equality above is not vacuous.
    assert sequential["cartpole_swingup"][0][1] != sequential["cartpole_swingup"][1][1]


def test_knot_threads_give_the_single_threads_solution():
    problem = knot.load(ROOT / "configs" / "iiwa14_reach.yaml", set={"horizon.N": "16"})
    one = knot.Solver(problem)
    three = knot.Solver(problem, threads=3)
    assert (one.threads, three.threads) == (1, 3)
    assert one.solve() == three.solve()
    assert one.solution.cost == three.solution.cost
    assert np.array_equal(one.solution.x, three.solution.x) and np.array_equal(one.solution.u, three.solution.u)
    assert knot.Solver(problem, threads=1000).threads == problem.N + 1
    try:
        knot.Solver(problem, threads=-1)
    except (ValueError, knot.Error) as e:
        assert "threads must be >= 0" in str(e)
    else:
        raise AssertionError("threads=-1 was accepted")
