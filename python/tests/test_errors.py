"""Errors: Knot's messages as exceptions, bad shapes and dtypes as ValueError, never a crash."""

import numpy as np
import pytest

import knot

BAD_YAML = """name: bad
model: {type: cartpole}
horizon: {N: 20, dt: 0.05, integrator: rk5}
x0: [0, 3.14, 0, 0]
"""


def test_a_problem_file_error_names_file_line_and_key():
    with pytest.raises(knot.Error) as info:
        knot.load_string(BAD_YAML, name="bad.yaml")
    e = info.value
    assert isinstance(e, ValueError)
    assert (e.file, e.line, e.key) == ("bad.yaml", 3, "horizon.integrator")
    assert "bad.yaml:3:" in str(e) and "horizon.integrator" in str(e) and "rk5" in str(e)


def test_a_missing_file_and_a_bad_override_are_knot_errors(cartpole_path, tmp_path):
    with pytest.raises(knot.Error, match="missing.yaml"):
        knot.load(tmp_path / "missing.yaml")
    with pytest.raises(knot.Error) as info:
        knot.load(cartpole_path, set={"horizon.N": "many"})
    assert info.value.key == "horizon.N" and "many" in str(info.value)
    # Negative control: the same override with a valid value loads.
    assert knot.load(cartpole_path, set={"horizon.N": 12}).N == 12


def test_overrides_take_python_values(cartpole_path):
    p = knot.load(cartpole_path, set={"x0": np.array([0.0, 3.0, 0.0, 0.0]), "horizon.dt": 0.04,
                                      "solver.verbose": False})
    assert list(p.x0) == [0.0, 3.0, 0.0, 0.0] and p.dt == 0.04
    assert knot.load(cartpole_path, set=["horizon.N=15"]).N == 15
    assert knot.load(cartpole_path, set={"horizon": {"N": 16, "dt": 0.05, "integrator": "rk4"}}).N == 16
    with pytest.raises(TypeError, match="override value"):
        knot.load(cartpole_path, set={"horizon.N": object()})


def test_options_are_checked(cartpole_path):
    p = knot.load(cartpole_path)
    with pytest.raises(TypeError, match="'max_iters'"):
        knot.Solver(p, max_iters=10)
    with pytest.raises(TypeError, match="max_iter must be an int"):
        knot.Solver(p, max_iter=10.5)
    with pytest.raises(ValueError, match="max_iter must be >= 1"):
        knot.Solver(p, max_iter=0)
    with pytest.raises(ValueError, match="linsys must be one of"):
        knot.Solver(p, linsys="cholesky")
    with pytest.raises(TypeError, match="real_time_iteration must be a bool"):
        knot.Solver(p, real_time_iteration=1)
    s = knot.Solver(p, max_iter=7, linsys="pcg", hessian="gauss_newton", tol_feasibility=1e-9)
    assert (s.options["max_iter"], s.options["linsys"], s.options["tol_feasibility"]) == (7, "pcg", 1e-9)
    assert set(s.options) == set(knot.option_names())


def test_the_hessian_and_fallback_options_reach_the_solver(cartpole_path):
    # The default Hessian is auto; every choice round-trips, and the rows say which Hessian a step used.
    p = knot.load(cartpole_path)
    assert knot.Solver(p).options["hessian"] == "auto"
    s = knot.Solver(p, hessian="exact", hessian_switch_window=3, hessian_switch_ratio=0.5,
                    riccati_fallback=False, inexact_rollout=False, linsys="bdsv")
    assert (s.options["hessian"], s.options["hessian_switch_window"], s.options["riccati_fallback"]) == \
        ("exact", 3, False)
    s.solve()
    rows = s.stats.per_iteration
    assert all(r["exact_hessian"] for r in rows) and not any(r["lq_riccati_fallback"] for r in rows)
    assert s.stats.riccati_fallbacks == 0
    with pytest.raises(ValueError, match="hessian must be one of"):
        knot.Solver(p, hessian="newton")
    gn = knot.Solver(p, hessian="gauss_newton")
    gn.solve()
    assert not any(r["exact_hessian"] for r in gn.stats.per_iteration)


def test_a_problem_the_solver_cannot_treat_is_a_knot_error(cartpole_path):
    p = knot.load(cartpole_path, set={"solver.memory_limit": 1e-9})
    with pytest.raises(knot.Error) as info:
        knot.Solver(p)
    assert info.value.key == "solver.memory_limit"


@pytest.mark.parametrize("x0, found", [
    ([0.0, 1.0, 2.0], "found (3,)"),
    (np.zeros((4, 1)), "found (4, 1)"),
    (np.zeros(4, dtype=complex), "found dtype complex128"),
    (["a", "b", "c", "d"], "found dtype str"),
    (np.zeros(4, dtype=bool), "found dtype bool"),
])
def test_bad_initial_states_are_value_errors(cartpole_path, x0, found):
    s = knot.Solver(knot.load(cartpole_path))
    with pytest.raises(ValueError, match="expected .*shape \\(4,\\)") as info:
        s.set_initial_state(x0)
    assert found in str(info.value)


def test_good_initial_states_convert(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    s.set_initial_state([0, 3, 0, 0])                              # ints
    s.set_initial_state(np.array([0, 3, 0, 0], dtype=np.float32))  # another float width
    s.set_initial_state(np.zeros((4, 2))[:, 0])                    # not contiguous
    s.solve()
    assert s.solution.x[0, 1] == 0.0


def test_bad_guesses_and_references(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    with pytest.raises(ValueError, match=r"x: expected shape \(21, 4\), found \(20, 4\)"):
        s.set_initial_guess(np.zeros((20, 4)), np.zeros((20, 1)))
    with pytest.raises(ValueError, match=r"u: expected shape \(20, 1\), found \(20,\)"):
        s.set_initial_guess(np.zeros((21, 4)), np.zeros(20))
    with pytest.raises(ValueError, match="nosuch"):
        s.set_reference("nosuch", [0, 0, 0, 0])
    with pytest.raises(ValueError):
        s.set_reference("state", [0, 0])  # wrong dim
    with pytest.raises(ValueError, match="dimensions"):
        s.set_reference("state", np.zeros((2, 2, 2)))
    s.solve()
    assert s.status == knot.Status.Solved  # nothing was changed by the rejected calls


def test_a_nan_initial_state_is_a_status_not_an_exception(cartpole_path):
    s = knot.Solver(knot.load(cartpole_path))
    s.set_initial_state([np.nan, 0, 0, 0])
    assert s.solve() == knot.Status.NumericalError
    assert not s.status.solved and s.status.message
