"""Knot's rigid-body dynamics against Pinocchio (an independent implementation) on URDF files.

usage: crosscheck.py KNOT_DUMP_DYNAMICS FILE.urdf[:EE_FRAME]...

For each file, tau = RNEA(q, qd, qdd), the mass matrix and dtau/dq, dtau/dqd at the states that
knot_dump_dynamics prints must agree to 1e-11 relative to the largest entry. Joints are matched by
name, so Knot's depth-first numbering and Pinocchio's need not agree. Negative control: the same
comparison against a Pinocchio model with one body's mass changed by 1% must fail.
Needs `pip install "pin==4.0.0"`; exits 77 (ctest's skip code) without it.
"""
import subprocess
import sys

try:
    import numpy as np
    import pinocchio as pin
except ImportError:
    print("crosscheck.py: skipped, python3 cannot import pinocchio (pip install \"pin==4.0.0\")")
    sys.exit(77)

TOL = 1e-11


def knot_records(dump, urdf, ee):
    args = [dump, urdf] + ([ee] if ee else [])
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout.split("\n")
    names = out[0].split()[1:]
    n = len(names)
    states = []
    for k in range(1, len(out) - 1, 5):
        s = np.array(out[k].split()[1:], float)
        rec = {"q": s[:n], "qd": s[n:2 * n], "qdd": s[2 * n:]}
        rec["tau"] = np.array(out[k + 1].split()[1:], float)
        for j, key in enumerate(["M", "dtau_dq", "dtau_dqd"]):
            rec[key] = np.array(out[k + 2 + j].split()[1:], float).reshape(n, n, order="F")
        states.append(rec)
    return names, states


def pinocchio_values(model, names, rec):
    data = model.createData()
    idx = [model.joints[model.getJointId(name)].idx_v for name in names]
    if len(idx) != model.nv:
        raise SystemExit(f"Knot models {len(idx)} joints, Pinocchio {model.nv}")
    q, qd, qdd = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
    q[idx], qd[idx], qdd[idx] = rec["q"], rec["qd"], rec["qdd"]
    tau = pin.rnea(model, data, q, qd, qdd)[idx]
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    dq, dqd, _ = pin.computeRNEADerivatives(model, data, q, qd, qdd)
    sub = np.ix_(idx, idx)
    return {"tau": tau, "M": M[sub], "dtau_dq": dq[sub], "dtau_dqd": dqd[sub]}


def worst(model, names, states):
    err = {}
    for rec in states:
        ref = pinocchio_values(model, names, rec)
        for key, value in ref.items():
            e = np.abs(rec[key] - value).max() / max(1.0, np.abs(value).max())
            err[key] = max(err.get(key, 0.0), e)
    return err


def main():
    dump, urdfs = sys.argv[1], sys.argv[2:]
    failed = False
    for arg in urdfs:
        urdf, _, ee = arg.partition(":")
        names, states = knot_records(dump, urdf, ee)
        model = pin.buildModelFromUrdf(urdf)
        err = worst(model, names, states)
        line = ", ".join(f"{k} {v:.1e}" for k, v in err.items())
        ok = all(v <= TOL for v in err.values())
        print(f"{urdf}: {len(names)} joints, {len(states)} states, worst relative error {line}: {'ok' if ok else 'FAIL'}")
        failed |= not ok
        # Negative control: a 1% heavier last body must be seen.
        wrong = model.copy()
        body = wrong.nbodies - 1
        wrong.inertias[body] = pin.Inertia(1.01 * wrong.inertias[body].mass, wrong.inertias[body].lever,
                                           wrong.inertias[body].inertia)
        control = max(worst(wrong, names, states).values())
        if control <= TOL:
            print(f"{urdf}: the negative control (last body 1% heavier) passed the comparison: FAIL")
            failed = True
        else:
            print(f"{urdf}: negative control (last body 1% heavier) caught, worst relative error {control:.1e}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
