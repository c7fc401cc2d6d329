"""The type stubs beside the module and the docstrings help() shows."""

import ast
import pathlib
import pydoc

import knot
from knot import _knot


def test_the_stubs_name_every_public_class_and_method():
    stub = pathlib.Path(_knot.__file__).with_name("_knot.pyi")
    tree = ast.parse(stub.read_text())
    classes = {n.name: {m.name for m in n.body if isinstance(m, ast.FunctionDef)}
               for n in tree.body if isinstance(n, ast.ClassDef)}
    for name in ["Status", "Problem", "Solution", "Solver", "BatchSolver", "ClosedLoop"]:
        assert name in classes, name
    for method in ["solve", "step", "set_initial_state", "set_reference", "set_bounds", "set_obstacle",
                   "set_initial_guess", "shift", "set_iteration_callback", "solution", "stats"]:
        assert method in classes["Solver"], method
    for method in ["solve", "set_initial_state", "set_initial_states", "set_reference", "set_bounds", "set_obstacle",
                   "set_model_parameters", "set_initial_guess", "solution", "stats", "statuses", "costs", "x", "u",
                   "backend", "precision", "device_bytes"]:
        assert method in classes["BatchSolver"], method
    assert (pathlib.Path(knot.__file__).with_name("py.typed")).exists()


def test_help_reads_the_docstrings():
    text = pydoc.render_doc(knot.Solver, renderer=pydoc.plaintext)
    assert "Knot's SQP solver" in text and "Releases the GIL" in text and "set_iteration_callback" in text
    assert "problem file" in knot.load.__doc__
