"""The iteration callback: rows as dicts, stopping a solve, exceptions raised by solve()."""

import pytest

import knot


def test_rows_reach_the_callback_as_the_stats_record_them(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    seen = []
    s.set_iteration_callback(lambda row, i: seen.append((i, row)))
    assert s.solve() == knot.Status.Solved
    assert [i for i, _ in seen] == list(range(s.stats.iterations + 1))
    assert [row for _, row in seen][:-1] != []
    # The last row is final when reported; earlier rows gain their step fields afterwards.
    assert seen[-1][1] == s.stats.per_iteration[-1]
    assert [row["cost"] for _, row in seen] == [row["cost"] for row in s.stats.per_iteration]


def test_returning_false_stops_the_solve(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    s.set_iteration_callback(lambda row, i: i < 3)
    assert s.solve() == knot.Status.Interrupted
    # As in C++: the step under way finishes, and its iterate is measured and reported too.
    assert s.solution.iterations == 4 and s.status.message == "stopped by the iteration callback"
    # Negative control: True (or None) continues, to convergence.
    s.set_iteration_callback(lambda row, i: True)
    s.set_initial_state(knot.load(cartpole_path).x0)
    assert s.solve() in (knot.Status.Solved, knot.Status.SolvedAcceptable)
    s.set_iteration_callback(None)
    assert s.solve() == knot.Status.Solved


def test_an_exception_in_the_callback_stops_and_is_raised(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))

    def boom(row, i):
        if i == 2:
            raise KeyError("from the callback")

    s.set_iteration_callback(boom)
    with pytest.raises(KeyError, match="from the callback"):
        s.solve()
    assert s.solution.iterations == 3  # stopped there, as a callback returning False
    s.set_iteration_callback(None)
    assert s.solve() == knot.Status.Solved


def test_a_callback_cannot_reenter_its_solver(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    s.set_iteration_callback(lambda row, i: s.solve())
    with pytest.raises(RuntimeError, match="running already"):
        s.solve()
    s.set_iteration_callback(lambda row, i: s.set_initial_state([0, 0, 0, 0]))
    with pytest.raises(RuntimeError, match="running already"):
        s.solve()
    # Reading is allowed: the callback sees the iterate as it stands.
    costs = []
    s.set_iteration_callback(lambda row, i: costs.append(s.solution.cost))
    s.solve()
    assert costs[-1] == s.solution.cost
    s.set_iteration_callback(None)  # also breaks the cycle solver -> lambda -> solver


def test_a_non_callable_is_a_type_error(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    with pytest.raises(TypeError):
        s.set_iteration_callback(3)
