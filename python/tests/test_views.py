"""solution.x / .u view the solver's memory: they change with the solver and keep it alive."""

import gc
import weakref

import numpy as np
import pytest

import knot


def test_views_have_the_documented_shapes(cartpole_path):
    solver = knot.Solver(knot.load(cartpole_path, set={"horizon.N": 30}))
    solver.solve()
    sol = solver.solution
    assert sol.x.shape == (31, 4) and sol.u.shape == (30, 1) and sol.lambda_.shape == (31, 4)
    assert sol.x.dtype == np.float64 and not sol.x.flags.writeable


def test_views_alias_the_solvers_memory(cartpole_path):
    solver = knot.Solver(knot.load(cartpole_path))
    solver.solve()
    x, u = solver.solution.x, solver.solution.u
    copy_x, copy_u = np.array(x), np.array(u)      # negative control: copies do not follow
    assert np.shares_memory(x, solver.solution.x)  # every access sees the same memory
    assert not np.shares_memory(copy_x, x)

    solver.set_initial_state([0.0, 2.5, 0.0, 0.0])
    solver.solve()
    assert x[0, 1] == 2.5 and np.array_equal(x, solver.solution.x) and np.array_equal(u, solver.solution.u)
    assert copy_x[0, 1] != 2.5 and not np.array_equal(copy_x, x) and not np.array_equal(copy_u, u)


def test_a_view_keeps_its_solver_alive(cartpole_path):
    solver = knot.Solver(knot.load(cartpole_path))
    solver.solve()
    expected = np.array(solver.solution.x)
    x = solver.solution.x
    alive = weakref.ref(solver)
    del solver
    gc.collect()
    assert alive() is not None  # the array holds the solver
    assert np.array_equal(x, expected)
    del x
    gc.collect()
    assert alive() is None  # negative control: without the array it goes


def test_views_are_read_only(cartpole_path):
    solver = knot.Solver(knot.load(cartpole_path))
    with pytest.raises(ValueError):
        solver.solution.x[0, 0] = 1.0
