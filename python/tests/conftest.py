"""Shared fixtures: the repository root, the `knot` program the results are compared with."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(os.environ.get("KNOT_ROOT", pathlib.Path(__file__).resolve().parents[2]))
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


@pytest.fixture
def cartpole_path():
    return ROOT / "configs" / "cartpole_swingup.yaml"


@pytest.fixture
def knot_cli():
    cli = os.environ.get("KNOT_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("KNOT_CLI names no knot program (ctest sets it where the tools are built)")
    return cli
