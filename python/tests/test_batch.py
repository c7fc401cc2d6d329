"""knot.BatchSolver: B problems at once, each what a separate Solver gives."""

import numpy as np
import pytest

import knot
from conftest import ROOT


def starts(problem, count, sigma=0.05, seed=3):
    rng = np.random.default_rng(seed)
    x0 = np.array(problem.x0)
    return np.array([x0 + (sigma * rng.standard_normal(x0.size) if i else 0.0) for i in range(count)])


def test_each_problem_is_a_separate_solvers(cartpole_path):
    problem = knot.load(cartpole_path)
    x0 = starts(problem, 5)
    batch = knot.BatchSolver(problem, 5, threads=2)
    assert len(batch) == 5 and batch.size == 5 and batch.threads == 2 and batch.path == "solvers"
    batch.set_initial_states(x0)
    assert batch.solve() == 5
    assert batch.x.shape == (5, problem.N + 1, 4) and batch.u.shape == (5, problem.N, 1)
    for i in range(5):
        s = knot.Solver(problem)
        s.set_initial_state(x0[i])
        s.solve()
        assert batch.statuses[i] == s.solution.status and batch.iterations[i] == s.solution.iterations
        assert batch.costs[i] == s.solution.cost  # bitwise: the same code on the same numbers
        assert np.array_equal(batch.x[i], s.solution.x) and np.array_equal(batch.solution(i).u, s.solution.u)
    assert batch.costs[1] != batch.costs[0]  # negative control: the problems differ


def test_a_nan_problem_leaves_the_others_unchanged(cartpole_path):
    problem = knot.load(cartpole_path)
    x0 = starts(problem, 3)
    clean = knot.BatchSolver(problem, 3)
    clean.set_initial_states(x0)
    clean.solve()
    x0[1, 2] = np.nan
    dirty = knot.BatchSolver(problem, 3)
    dirty.set_initial_states(x0)
    assert dirty.solve() == 2
    assert dirty.statuses[1] == knot.Status.NumericalError
    for i in (0, 2):
        assert dirty.costs[i] == clean.costs[i] and np.array_equal(dirty.x[i], clean.x[i])


def test_per_problem_setters_reach_their_problem_alone(cartpole_path):
    problem = knot.load(cartpole_path)
    batch = knot.BatchSolver(problem, 3)
    batch.set_bounds(1, "force_limit", -80.0, np.inf)  # a row removed
    batch.set_reference(2, "state", [0.5, 0.0, 0.0, 0.0])
    batch.solve()
    # The references: each Solver on a problem of its own (set_reference writes the problem's term).
    alone = knot.Solver(knot.load(cartpole_path))
    alone.set_bounds("force_limit", -80.0, np.inf)
    alone.solve()
    assert batch.costs[1] == alone.solution.cost
    assert len(batch.solution(1).z) < len(batch.solution(0).z)
    moved = knot.Solver(knot.load(cartpole_path))
    moved.set_reference("state", [0.5, 0.0, 0.0, 0.0])
    moved.solve()
    assert batch.costs[2] == moved.solution.cost
    plain = knot.Solver(knot.load(cartpole_path))
    plain.solve()
    assert batch.costs[0] == plain.solution.cost and batch.costs[0] != batch.costs[2]
    untouched = knot.Solver(problem)  # the batch's setters left the Problem it was built from alone
    untouched.solve()
    assert untouched.solution.cost == plain.solution.cost


def test_the_device_path_agrees_with_the_solvers_path():
    problem = knot.load(ROOT / "configs" / "pendulum_swingup.yaml")
    x0 = starts(problem, 3, sigma=0.02)
    costs = []
    for path in ("solvers", "device"):
        batch = knot.BatchSolver(problem, 3, path=path, hessian="gauss_newton")
        assert batch.path == path
        batch.set_initial_states(x0)
        batch.solve()
        costs.append(batch.costs)
    assert np.allclose(costs[0], costs[1], rtol=1e-9, atol=0)


def test_mistakes_are_errors(cartpole_path):
    problem = knot.load(cartpole_path)
    batch = knot.BatchSolver(problem, 2)
    with pytest.raises(IndexError):
        batch.set_initial_state(2, problem.x0)
    with pytest.raises(ValueError, match=r"\(2, 4\)"):
        batch.set_initial_states(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="force_limit"):
        batch.set_bounds(0, "force_limit", 1.0, -1.0)
    with pytest.raises(ValueError, match="path"):
        knot.BatchSolver(problem, 2, path="gpu")
    with pytest.raises(ValueError):
        knot.BatchSolver(problem, 0)
    with pytest.raises(TypeError, match="no_such_option"):
        knot.BatchSolver(problem, 2, no_such_option=1)
