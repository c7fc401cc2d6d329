#!/usr/bin/env python3
"""Tests of tools/plot.py, one case per ctest test (knot_plot.<case>, tools/knot/plot.cmake).

    plot_test.py CASE --work DIR

Runs the script under this interpreter on the fixtures of tests/data/plot and checks what it
prints, its exit code and the files it writes: each PNG must be a whole PNG file (signature,
IHDR, IEND) of a plausible size in pixels and between 1 KB and 200 KB. check_rejects_bad_png is
the negative control of that check.
"""

import os
import shutil
import struct
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SCRIPT = os.path.join(ROOT, "tools", "plot.py")
DATA = os.path.join(ROOT, "tests", "data", "plot")
NO_MATPLOTLIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "no_matplotlib")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_END = b"IEND\xaeB`\x82"


class Failure(Exception):
    pass


def check_png(path):
    """Raises Failure unless `path` is a whole PNG of 1 KB..200 KB and 200..3000 pixels a side."""
    if not os.path.isfile(path):
        raise Failure(f"{path}: not written")
    with open(path, "rb") as f:
        data = f.read()
    if not data.startswith(PNG_SIGNATURE):
        raise Failure(f"{path}: no PNG signature")
    if data[12:16] != b"IHDR":
        raise Failure(f"{path}: no IHDR chunk first")
    width, height = struct.unpack(">II", data[16:24])
    if not (200 <= width <= 3000 and 200 <= height <= 3000):
        raise Failure(f"{path}: {width} x {height} pixels, expected 200..3000 a side")
    if not data.endswith(PNG_END):
        raise Failure(f"{path}: truncated (no IEND chunk at the end)")
    if not 1024 < len(data) < 200 * 1024:
        raise Failure(f"{path}: {len(data)} bytes, expected more than 1 KB and less than 200 KB")


def run(args, env=None):
    p = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


def expect_pngs(args, folder, names):
    """Runs the script, which must exit 0, print exactly folder/<name> for `names` in order, and
    leave nothing else in the folder; checks every PNG."""
    rc, out, err = run(args)
    if rc != 0:
        raise Failure(f"exit {rc}, expected 0; stderr: {err.strip()}")
    printed = out.split()
    expected = [os.path.join(folder, n) for n in names]
    if printed != expected:
        raise Failure(f"printed {printed}, expected {expected}")
    for path in expected:
        check_png(path)
    extra = sorted(set(os.listdir(folder)) - set(names) - {"trajectory.csv", "stats.json"})
    if extra:
        raise Failure(f"unexpected files in {folder}: {extra}")


def expect_error(args, code, message, env=None):
    rc, out, err = run(args, env)
    if rc != code:
        raise Failure(f"exit {rc}, expected {code}; stderr: {err.strip()}")
    if message not in err:
        raise Failure(f"stderr {err.strip()!r} does not contain {message!r}")
    if out.strip():
        raise Failure(f"printed {out.strip()!r} on failure, expected nothing")


def fixture(*parts):
    return os.path.join(DATA, *parts)


def case_trajectory(work):
    expect_pngs([fixture("cartpole_swingup", "trajectory.csv"), "--out", work], work, ["trajectory.png"])


def case_manipulator(work):
    expect_pngs([fixture("iiwa14_mpcgpu", "trajectory.csv"), "--out", work], work,
                ["trajectory.png", "trajectory_path.png"])


def case_trajectory_without_stats(work):
    # No stats.json: names from the columns, no bounds; the PNG goes beside the CSV (no --out).
    csv_path = os.path.join(work, "trajectory.csv")
    shutil.copy(fixture("cartpole_swingup", "trajectory.csv"), csv_path)
    expect_pngs([csv_path], work, ["trajectory.png"])


def case_closed_loop(work):
    expect_pngs([fixture("cartpole_mpc", "closed_loop.csv"), "--out", work], work,
                ["closed_loop.png", "closed_loop_solve_time.png"])


def case_closed_loop_manipulator(work):
    # No summary.json: names from the columns, no deadline; the end-effector path of the plant.
    expect_pngs([fixture("iiwa14_closed_loop", "closed_loop.csv"), "--out", work], work,
                ["closed_loop.png", "closed_loop_path.png", "closed_loop_solve_time.png"])


def case_bench(work):
    expect_pngs([fixture("bench_linalg.csv"), "--out", work], work, ["bench_linalg.png"])


def case_two_inputs_one_folder(work):
    # Two trajectory.csv into one folder: the second's figures get their own names.
    expect_pngs([fixture("cartpole_swingup", "trajectory.csv"), fixture("iiwa14_mpcgpu", "trajectory.csv"),
                 "--out", work], work, ["trajectory.png", "trajectory_2.png", "trajectory_2_path.png"])


def case_check_rejects_bad_png(work):
    # The negative control: check_png accepts a real figure and rejects each kind of bad file.
    run([fixture("cartpole_swingup", "trajectory.csv"), "--out", work])
    good = os.path.join(work, "trajectory.png")
    check_png(good)
    with open(good, "rb") as f:
        data = f.read()
    bad = {
        "missing.png": None,
        "text.png": b"not a picture\n" * 200,
        "truncated.png": data[: len(data) // 2],
        "tiny.png": data[:33] + PNG_END,  # signature and IHDR, then the end: under 1 KB
        "huge.png": data[:-12] + b"\0" * (200 * 1024) + data[-12:],
    }
    for name, contents in bad.items():
        path = os.path.join(work, name)
        if contents is not None:
            with open(path, "wb") as f:
                f.write(contents)
        try:
            check_png(path)
        except Failure:
            continue
        raise Failure(f"check_png accepted {name}")


def case_unknown_header(work):
    expect_error([fixture("unknown_header.csv"), "--out", work], 1,
                 "unknown_header.csv: unknown CSV kind, header 'iteration,cost,stationarity'")
    if os.listdir(work):
        raise Failure(f"files written on failure: {os.listdir(work)}")


def case_missing_file(work):
    missing = os.path.join(work, "no_such.csv")
    expect_error([missing], 1, f"{missing}: no such file")


def case_bad_number(work):
    path = os.path.join(work, "trajectory.csv")
    with open(path, "w") as f:
        f.write("knot,time,x,u\n0,0,1,2\n1,0.1,abc,\n")
    expect_error([path], 1, "trajectory.csv, line 3, column 'x': expected a number, found 'abc'")


def case_no_matplotlib(work):
    env = dict(os.environ, PYTHONPATH=NO_MATPLOTLIB)
    expect_error([fixture("cartpole_swingup", "trajectory.csv"), "--out", work], 3,
                 "matplotlib is not installed (apt-get install python3-matplotlib)", env)


def main(argv):
    cases = {name[5:]: f for name, f in globals().items() if name.startswith("case_")}
    if len(argv) != 3 or argv[1] != "--work" or argv[0] not in cases:
        print(f"usage: plot_test.py {{{','.join(cases)}}} --work DIR", file=sys.stderr)
        return 2
    work = os.path.abspath(argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        cases[argv[0]](work)
    except Failure as e:
        print(f"FAIL {argv[0]}: {e}", file=sys.stderr)
        return 1
    print(f"ok {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
