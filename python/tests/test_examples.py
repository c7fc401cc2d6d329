"""examples/python run and write their figures."""

import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("matplotlib")


@pytest.mark.parametrize("example", ["cartpole_closed_loop", "iiwa14_reach", "cartpole_batch"])
def test_example_writes_its_figure(example, tmp_path):
    png = tmp_path / f"{example}.png"
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / f"{example}.py"), str(png)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert png.stat().st_size > 10_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_readme_quick_start_runs_as_written(monkeypatch):
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python quick start"):]
    code = section[section.index("```python\n") + len("```python\n"):]
    code = code[:code.index("```")]
    monkeypatch.chdir(ROOT)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["status"].solved and scope["x"].shape == (41, 4) and scope["u"].shape == (40, 1)
