#!/usr/bin/env python3
"""PNG figures from Knot's CSV outputs.

    tools/plot.py FILE.csv... [--out DIR]

Each CSV's kind comes from its header:
  knot,time,...          a trajectory (knot solve): states and controls against time, the
                         end-effector path in 3-D for a manipulator;
  step,time,...          a closed loop (knot mpc): the same with the references, and a
                         histogram of the solve times with the deadline;
  group,case,knot,...    knot bench linalg --format csv: time against size, log-log.
Names and box bounds come from the stats.json (trajectory) or summary.json (closed loop) beside
the CSV, when there is one that describes it. The PNGs go beside each CSV, or into DIR. Prints
the path of every PNG written, one per line.

Exit codes (those of the knot command): 0 written, 1 bad input or usage, 3 matplotlib missing.
"""

import argparse
import csv
import io
import json
import math
import os
import re
import sys

EXIT_INPUT = 1
EXIT_NO_MATPLOTLIB = 3
DPI = 100
# Up to this many signals get a panel each; more are grouped (positions, velocities, controls).
MAX_SINGLE_PANELS = 8
MAX_LINES_PER_PANEL = 7


class InputError(Exception):
    """A problem with the user's files: reported with the file's name, exit code 1."""


class Table:
    """A CSV file as its header and rows of strings; columns are looked up by name."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, newline="") as f:
                rows = list(csv.reader(f))
        except OSError as e:
            raise InputError(f"{path}: cannot read: {e.strerror}") from None
        except (csv.Error, UnicodeDecodeError) as e:
            raise InputError(f"{path}: not a CSV file: {e}") from None
        if not rows or not rows[0]:
            raise InputError(f"{path}: empty file (expected a CSV header)")
        self.header = [h.strip() for h in rows[0]]
        self.lines = [n for n, r in enumerate(rows[1:], start=2) if r]  # blank lines skipped
        self.rows = [r for r in rows[1:] if r]
        self.index = {}
        for i, name in enumerate(self.header):
            self.index.setdefault(name, i)

    def has(self, name):
        return name in self.index

    def text(self, name):
        i = self.index[name]
        return [r[i].strip() if i < len(r) else "" for r in self.rows]

    def numbers(self, name):
        """The column as floats; an empty cell is NaN ("no value")."""
        out = []
        for line, cell in zip(self.lines, self.text(name)):
            if cell == "":
                out.append(math.nan)
                continue
            try:
                out.append(float(cell))
            except ValueError:
                raise InputError(f"{self.path}, line {line}, column '{name}': expected a number, "
                                 f"found '{cell}'") from None
        return np.array(out, dtype=float)

    def last_cell_empty(self, name):
        return bool(self.rows) and self.text(name)[-1] == ""


def kind_of(header):
    if header[:2] == ["knot", "time"]:
        return "trajectory"
    if header[:2] == ["step", "time"]:
        return "closed_loop"
    if header[:4] == ["group", "case", "knot", "knot_us"]:
        return "bench"
    return None


def read_sidecar(csv_path, name):
    """The JSON file `name` beside the CSV, or None when there is none."""
    path = os.path.join(os.path.dirname(os.path.abspath(csv_path)), name)
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise InputError(f"{path}: not valid JSON: {e}") from None


def frames(table, names):
    """Prefixes P with P.x, P.y, P.z columns that are not among `names` (end-effector positions)."""
    out = []
    for h in table.header:
        if h.endswith(".x") and h not in names:
            p = h[:-2]
            if table.has(p + ".y") and table.has(p + ".z"):
                out.append(p)
    return out


class Signal:
    def __init__(self, name, values, control, lower=None, upper=None, ref=None):
        self.name, self.values, self.control = name, values, control
        self.lower, self.upper, self.ref = lower, upper, ref


def bound(values, i):
    if not isinstance(values, list) or i >= len(values):
        return None
    v = values[i]
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None


def signals(table, problem, candidates, refs):
    """States and controls: named by the sidecar's problem when it describes this CSV, else the
    candidate columns split by the last row (a control has no value at the last knot / step)."""
    states = controls = None
    bounds = {}
    if isinstance(problem, dict):
        s, c = problem.get("state_names"), problem.get("control_names")
        if isinstance(s, list) and isinstance(c, list) and all(table.has(n) for n in s + c):
            states, controls = s, c
            bounds = problem.get("bounds") or {}
        else:
            print(f"plot.py: warning: the JSON beside {table.path} names other states or controls "
                  "than its columns; plotting without its names and bounds", file=sys.stderr)
    if states is None:
        controls = [n for n in candidates if table.last_cell_empty(n)]
        states = [n for n in candidates if n not in controls]
    out = []
    for i, n in enumerate(states):
        ref = table.numbers("ref." + n) if refs and table.has("ref." + n) else None
        out.append(Signal(n, table.numbers(n), False, bound(bounds.get("x_lower"), i),
                          bound(bounds.get("x_upper"), i), ref))
    for i, n in enumerate(controls):
        out.append(Signal(n, table.numbers(n), True, bound(bounds.get("u_lower"), i),
                          bound(bounds.get("u_upper"), i)))
    return out


def name_group(name):
    m = re.match(r"[A-Za-z]+", name)
    return m.group(0) if m else name


def chunks(items, most):
    """`items` in order, in the fewest panels of at most `most`, as even as can be (12 as 6 + 6)."""
    if not items:
        return []
    size = math.ceil(len(items) / math.ceil(len(items) / most))
    return [items[i:i + size] for i in range(0, len(items), size)]


def panels(sigs):
    """A panel per signal when there are few; else the states grouped by their name's leading
    letters (q_..., qd_...: positions and velocities) or in order, and the controls together."""
    if len(sigs) <= MAX_SINGLE_PANELS:
        return [[s] for s in sigs]
    states = [s for s in sigs if not s.control]
    controls = [s for s in sigs if s.control]
    groups = {}
    for s in states:
        groups.setdefault(name_group(s.name), []).append(s)
    if len(groups) < len(states) and len(groups) <= 6:
        out = [g for gs in groups.values() for g in chunks(gs, MAX_LINES_PER_PANEL)]
    else:
        out = chunks(states, MAX_LINES_PER_PANEL)
    return out + chunks(controls, MAX_LINES_PER_PANEL)


def hold_last(u):
    """A control column for a zero-order-hold step plot: the empty last cell repeats the one before,
    so the last interval is drawn."""
    u = u.copy()
    if len(u) > 1 and math.isnan(u[-1]):
        u[-1] = u[-2]
    return u


def near(b, values):
    """Whether a bound is close enough to the data to be worth its place on the axis (a far bound
    would squash the curve into a line)."""
    finite = values[np.isfinite(values)]
    if b is None or finite.size == 0:
        return False
    lo, hi = float(finite.min()), float(finite.max())
    span = max(hi - lo, 0.1 * max(abs(lo), abs(hi), 1.0))
    return lo - 0.5 * span <= b <= hi + 0.5 * span


def draw_panel(ax, t, group):
    single = len(group) == 1
    if single:
        ax.set_ylabel(group[0].name)
        labels = [group[0].name]
    else:
        prefix = os.path.commonprefix([s.name for s in group])
        labels = [s.name[len(prefix):] or s.name for s in group]
        ax.set_ylabel(prefix + "*" if prefix else "")
    bound_label = "bounds"
    for k, (s, label) in enumerate(zip(group, labels)):
        color = "C0" if single else f"C{k % 10}"
        if s.control:
            ax.step(t, hold_last(s.values), where="post", color=color, lw=1.2, label=label)
        else:
            # Dots at the knots while they are few enough to tell apart.
            ax.plot(t, s.values, color=color, lw=1.2, label=label, marker="o" if len(t) <= 60 else None, ms=2)
        if s.ref is not None and np.isfinite(s.ref).any():
            ax.plot(t, s.ref, "--", color=color, lw=1.0, alpha=0.8, label=f"{label} ref")
        for b in (s.lower, s.upper):
            if near(b, s.values):
                ax.axhline(b, color="0.45" if single else color, ls=":", lw=1.0, label=bound_label)
                bound_label = None
    ax.grid(True, lw=0.3, alpha=0.6)
    handles, names = ax.get_legend_handles_labels()
    if not single or len(names) > 1:
        # The bounds entry last, after the signals.
        order = sorted(range(len(names)), key=lambda i: names[i] == "bounds")
        ax.legend([handles[i] for i in order], [names[i] for i in order], fontsize=6, loc="upper left",
                  bbox_to_anchor=(1.0, 1.0), frameon=False, handlelength=1.5)


def time_figure(t, sigs, title):
    groups = panels(sigs)
    ncols = 1 if len(groups) <= 3 else 2
    nrows = math.ceil(len(groups) / ncols)
    grouped = any(len(g) > 1 for g in groups)
    width = (4.6 if grouped else 3.9) * ncols
    fig, axes = plt.subplots(nrows, ncols, sharex=True, squeeze=False,
                             figsize=(width, 1.55 * nrows + 0.7), dpi=DPI)
    for i, g in enumerate(groups):
        draw_panel(axes[i // ncols][i % ncols], t, g)
    for i in range(len(groups), nrows * ncols):
        axes[i // ncols][i % ncols].set_visible(False)
    for c in range(ncols):
        bottom = max(i for i in range(len(groups)) if i % ncols == c) // ncols
        axes[bottom][c].set_xlabel("time [s]")
        axes[bottom][c].xaxis.set_tick_params(labelbottom=True)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def path_figure(table, frame, title):
    xyz = [table.numbers(frame + c) for c in (".x", ".y", ".z")]
    keep = np.isfinite(xyz[0]) & np.isfinite(xyz[1]) & np.isfinite(xyz[2])
    x, y, z = (v[keep] for v in xyz)
    fig = plt.figure(figsize=(5.0, 4.6), dpi=DPI)
    ax = fig.add_subplot(projection="3d")
    ax.plot(x, y, z, color="C0", lw=1.5, label="path")
    if x.size:
        ax.scatter([x[0]], [y[0]], [z[0]], color="C2", s=20, label="start")
        ax.scatter([x[-1]], [y[-1]], [z[-1]], color="C3", marker="s", s=20, label="end")
        # Metres equal on the three axes, but no axis thinner than 60 % of the widest, so the
        # labels of a nearly planar path stay readable.
        spans = [max(float(v.max() - v.min()), 1e-3) for v in (x, y, z)]
        ax.set_box_aspect([max(s, 0.6 * max(spans)) for s in spans], zoom=0.85)
    ax.set_xlabel("x [m]", fontsize=7)
    ax.set_ylabel("y [m]", fontsize=7)
    ax.set_zlabel("z [m]", fontsize=7)
    ax.tick_params(labelsize=6)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(f"{title}: end-effector path ({frame})", fontsize=9)
    fig.subplots_adjust(left=0.02, right=0.95, bottom=0.04, top=0.93)
    return fig


def path_figures(table, frames_found, title):
    """(file suffix, figure) per end-effector frame: `_path`, or `_path_<frame>` when several."""
    if len(frames_found) == 1:
        return [("_path", path_figure(table, frames_found[0], title))]
    return [(f"_path_{f}", path_figure(table, f, title)) for f in frames_found]


def solve_time_figure(table, period, title):
    times = table.numbers("solve_time")
    times = times[np.isfinite(times) & (times > 0)] * 1e3
    if table.has("deadline_miss"):
        misses = int(np.nansum(table.numbers("deadline_miss")))
    elif period:
        misses = int(np.sum(times > period * 1e3))
    else:
        misses = None
    fig, ax = plt.subplots(figsize=(5.0, 2.8), dpi=DPI)
    if times.size:
        # Log-spaced bins: solve times spread over decades and the deadline is often far above them.
        lo = float(times.min()) / 1.2
        hi = max(float(times.max()), period * 1e3 if period else 0.0) * 1.2
        bins = np.logspace(math.log10(lo), math.log10(hi), 30)
        ax.hist(times, bins=bins, color="C0", alpha=0.85)
        ax.set_xscale("log")
    if period:
        ax.axvline(period * 1e3, color="C3", ls="--", lw=1.2, label=f"deadline {period * 1e3:g} ms")
        ax.legend(fontsize=7)
    ax.set_xlabel("solve time [ms]")
    ax.set_ylabel("steps")
    ax.grid(True, lw=0.3, alpha=0.6)
    miss_text = "" if misses is None else f", {misses} deadline miss{'es' if misses != 1 else ''}"
    ax.set_title(f"{title}: solve time, {times.size} steps{miss_text}", fontsize=9)
    fig.tight_layout()
    return fig


def problem_title(problem, path):
    if isinstance(problem, dict) and isinstance(problem.get("name"), str) and problem["name"]:
        return problem["name"]
    return os.path.splitext(os.path.basename(path))[0]


def plot_trajectory(table):
    stats = read_sidecar(table.path, "stats.json")
    problem = stats.get("problem") if isinstance(stats, dict) else None
    names = set(problem.get("state_names") or []) if isinstance(problem, dict) else set()
    fr = frames(table, names)
    skip = {f + c for f in fr for c in (".x", ".y", ".z")}
    candidates = [h for h in table.header[2:] if h not in skip]
    title = problem_title(problem, table.path)
    if isinstance(stats, dict) and isinstance(stats.get("status"), str):
        title += f" ({stats['status']}"
        if isinstance(stats.get("iterations"), int):
            title += f", {stats['iterations']} iterations"
        title += ")"
    figs = [("", time_figure(table.numbers("time"), signals(table, problem, candidates, False), title))]
    return figs + path_figures(table, fr, title)


def plot_closed_loop(table):
    summary = read_sidecar(table.path, "summary.json")
    problem = summary.get("problem") if isinstance(summary, dict) else None
    period = summary.get("control_period") if isinstance(summary, dict) else None
    period = float(period) if isinstance(period, (int, float)) and period > 0 else None
    names = set(problem.get("state_names") or []) if isinstance(problem, dict) else set()
    fr = frames(table, names)
    skip = {f + c for f in fr for c in (".x", ".y", ".z")}
    end = table.index.get("solve_time", len(table.header))
    candidates = [h for h in table.header[2:end] if h not in skip and not h.startswith("ref.")]
    title = problem_title(problem, table.path) + " closed loop"
    figs = [("", time_figure(table.numbers("time"), signals(table, problem, candidates, True), title))]
    figs += path_figures(table, fr, title)
    if table.has("solve_time"):
        figs.append(("_solve_time", solve_time_figure(table, period, title)))
    return figs


def bench_size(case, path, line):
    """(panel suffix, size) of a bench case: 'n=14' is n; 'bs=14 nb=64' is nb*bs, one panel per bs."""
    fields = dict(re.findall(r"(\w+)=(\d+)", case))
    if "n" in fields:
        return "", int(fields["n"])
    if "bs" in fields and "nb" in fields:
        return f", bs={fields['bs']}", int(fields["bs"]) * int(fields["nb"])
    if fields:
        return "", math.prod(int(v) for v in fields.values())
    raise InputError(f"{path}, line {line}, column 'case': expected sizes such as 'n=14' or "
                     f"'bs=14 nb=64', found '{case}'")


def plot_bench(table):
    for col in ("reference", "reference_us"):
        if not table.has(col):
            raise InputError(f"{table.path}: a bench CSV needs the column '{col}'")
    group, case, knot, ref = (table.text(c) for c in ("group", "case", "knot", "reference"))
    knot_us, ref_us = table.numbers("knot_us"), table.numbers("reference_us")
    data = {}  # panel -> series -> {size: microseconds}; repeated rows keep their first time
    for i in range(len(table.rows)):
        suffix, size = bench_size(case[i], table.path, table.lines[i])
        series = data.setdefault(group[i] + suffix, {})
        for name, us in ((f"knot {knot[i]}", knot_us[i]), (ref[i], ref_us[i])):
            if name.strip() and math.isfinite(us) and us > 0:
                series.setdefault(name, {}).setdefault(size, us)
    if not data:
        raise InputError(f"{table.path}: no rows")
    ncols = min(len(data), 3)
    nrows = math.ceil(len(data) / ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, figsize=(3.7 * ncols, 2.5 * nrows + 0.3), dpi=DPI)
    for k, (panel, series) in enumerate(data.items()):
        ax = axes[k // ncols][k % ncols]
        for j, (name, points) in enumerate(series.items()):
            sizes = sorted(points)
            ax.plot(sizes, [points[s] for s in sizes], marker="o", ms=3, lw=1.2,
                    ls="-" if name.startswith("knot ") else "--", color=f"C{j % 10}", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({s for points in series.values() for s in points})
        ax.set_xticks(sizes, [str(s) for s in sizes])  # the measured sizes, not powers of ten
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(panel, fontsize=9)
        ax.set_xlabel("n = nb * bs" if "bs=" in panel else "n")
        ax.set_ylabel("time [us]")
        ax.grid(True, which="both", lw=0.3, alpha=0.6)
        ax.legend(fontsize=6, frameon=False)
    for k in range(len(data), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.suptitle("knot bench linalg: median time per call", fontsize=9)
    fig.tight_layout()
    return [("", fig)]


def save(fig, path):
    """Writes the PNG whole or not at all (a temporary file renamed over the target)."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
        try:
            # A palette of 256 colours is plenty for line plots and makes the file several times smaller.
            from PIL import Image
            buf.seek(0)
            image = Image.open(buf).convert("RGB").quantize(colors=256)
            buf = io.BytesIO()
            image.save(buf, format="png", optimize=True)
        except ImportError:
            pass
        with open(tmp, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)
    except OSError as e:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise InputError(f"{path}: cannot write: {e.strerror}") from None
    finally:
        plt.close(fig)


class Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 1, as the knot command's do
        self.print_usage(sys.stderr)
        print(f"plot.py: {message}", file=sys.stderr)
        sys.exit(EXIT_INPUT)


def main(argv):
    parser = Parser(prog="plot.py", description="PNG figures from Knot's trajectory, closed-loop "
                    "and bench CSV files.")
    parser.add_argument("csv", nargs="+", help="trajectory.csv, closed_loop.csv or a bench CSV")
    parser.add_argument("--out", metavar="DIR", help="folder for the PNGs (default: beside each CSV)")
    args = parser.parse_args(argv)

    # Imported here, not at the top, so that a missing matplotlib gets its message and exit code.
    global matplotlib, plt, np
    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        print("plot.py: matplotlib is not installed (apt-get install python3-matplotlib)", file=sys.stderr)
        return EXIT_NO_MATPLOTLIB
    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8,
                         "xtick.labelsize": 7, "ytick.labelsize": 7})

    plotters = {"trajectory": plot_trajectory, "closed_loop": plot_closed_loop, "bench": plot_bench}
    stems = set()  # (folder, stem) of the inputs plotted so far
    try:
        # Every file is read and checked before any PNG is written.
        tables = []
        for path in args.csv:
            if not os.path.isfile(path):
                raise InputError(f"{path}: no such file")
            table = Table(path)
            kind = kind_of(table.header)
            if kind is None:
                raise InputError(
                    f"{path}: unknown CSV kind, header '{','.join(table.header)[:120]}' (expected "
                    "'knot,time,...' (trajectory), 'step,time,...' (closed loop) or "
                    "'group,case,knot,knot_us,...' (knot bench linalg --format csv))")
            tables.append((table, kind))
        if args.out:
            try:
                os.makedirs(args.out, exist_ok=True)
            except OSError as e:
                raise InputError(f"{args.out}: cannot create the folder: {e.strerror}") from None
        for table, kind in tables:
            out_dir = args.out or os.path.dirname(table.path) or "."
            base = os.path.splitext(os.path.basename(table.path))[0]
            stem, n = base, 2
            while (out_dir, stem) in stems:  # two inputs of one name into one --out folder
                stem, n = f"{base}_{n}", n + 1
            stems.add((out_dir, stem))
            for suffix, fig in plotters[kind](table):
                path = os.path.join(out_dir, stem + suffix + ".png")
                save(fig, path)
                print(path, flush=True)
    except InputError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return EXIT_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
