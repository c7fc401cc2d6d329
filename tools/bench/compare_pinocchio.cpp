// Knot's rigid-body kernels side by side with Pinocchio's and Crocoddyl's, in one process on the same
// inputs: forward-dynamics derivatives (dqdd/dq, dqdd/dqd, M^-1) against computeABADerivatives, the
// mass matrix against crba, and one semi-implicit Euler step with its sensitivities against
// Crocoddyl's IntegratedActionModelEuler (calc + calcDiff, no cost terms). Robots: a URDF given on
// the command line (the iiwa14) and two chains built here, 6 and 14 revolute joints with tilted
// axes; both libraries get the same joint placements, axes and inertias.
//
// Each round times every kernel over the same short batch of states, one after another (so a slow
// spell of the machine hits both sides of a ratio); the figures are the medians over the rounds of the
// per-call times. Run it pinned to one core: `taskset -c 1 knot_compare_pinocchio FILE.urdf`.
// Before timing, each pair's outputs are compared (the worst relative difference is printed), so a
// ratio is never one of two different computations.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <crocoddyl/core/integrator/euler.hpp>
#include <crocoddyl/multibody/actions/free-fwddyn.hpp>
#include <crocoddyl/multibody/actuations/full.hpp>
#include <crocoddyl/core/costs/cost-sum.hpp>
#include <crocoddyl/multibody/states/multibody.hpp>
#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/multibody/model.hpp>

#include "knot/problems/integrator.hpp"
#include "knot/problems/models/manipulator.hpp"
#include "knot/problems/robot/dynamics.hpp"
#include "knot/problems/robot/urdf.hpp"

namespace robot = knot::problems::robot;
using Clock = std::chrono::steady_clock;

namespace {

// A serial chain of n revolute joints: each joint 0.12 m along its parent's z and 0.05 m along x,
// turned 35 degrees about x from its parent, its axis z (Pinocchio's specialized RZ joints, as the
// URDF parser gives an arm whose axes are z), links of decreasing mass with off-centre COMs and
// full inertia tensors.
robot::RobotModel make_chain(int n) {
  robot::RobotModel m;
  m.name = "chain" + std::to_string(n);
  robot::RobotData& r = m.data;
  r.n = n;
  int parent[robot::kMaxJoints];
  const double t = 35.0 * M_PI / 180.0, c = std::cos(t), s = std::sin(t);
  for (int i = 0; i < n; ++i) {
    parent[i] = i - 1;
    r.type[i] = robot::JointType::Revolute;
    const double R[9] = {1, 0, 0, 0, c, s, 0, -s, c};  // Rot_x(t), column-major
    std::copy(R, R + 9, r.joint_R[i]);
    r.joint_p[i][0] = i == 0 ? 0.0 : 0.05;
    r.joint_p[i][1] = 0.0;
    r.joint_p[i][2] = i == 0 ? 0.1 : 0.12;
    r.axis[i][2] = 1.0;
    r.mass[i] = 4.0 - 2.5 * i / n;
    r.com[i][0] = 0.01 * (1 + i % 3);
    r.com[i][1] = -0.005 * (i % 2);
    r.com[i][2] = 0.06;
    const double base = 0.02 * r.mass[i];
    const double J[6] = {base, 1.1 * base, 0.6 * base, 0.05 * base, -0.03 * base, 0.02 * base};
    std::copy(J, J + 6, r.inertia[i]);
    r.q_lower[i] = -INFINITY;
    r.q_upper[i] = INFINITY;
    r.velocity_limit[i] = INFINITY;
    r.effort_limit[i] = INFINITY;
    m.joint_names.push_back("j" + std::to_string(i));
  }
  robot::set_tree(r, parent);
  return m;
}

// The same tree as a Pinocchio model: joint i at the placement (joint_R, joint_p) in its parent's
// frame, its body's inertia about its COM in body axes.
void to_pinocchio(const robot::RobotData& r, pinocchio::Model& model) {
  for (int i = 0; i < r.n; ++i) {
    Eigen::Matrix3d R;
    for (int col = 0; col < 3; ++col)
      for (int row = 0; row < 3; ++row) R(row, col) = r.joint_R[i][row + 3 * col];
    const Eigen::Vector3d p(r.joint_p[i][0], r.joint_p[i][1], r.joint_p[i][2]);
    const Eigen::Vector3d a(r.axis[i][0], r.axis[i][1], r.axis[i][2]);
    const pinocchio::SE3 placement(R, p);
    const auto parent = static_cast<pinocchio::JointIndex>(r.parent[i] + 1);
    const std::string name = "j" + std::to_string(i);
    pinocchio::JointIndex id;
    const bool revolute = r.type[i] == robot::JointType::Revolute;
    if (revolute && a == Eigen::Vector3d::UnitX()) {
      id = model.addJoint(parent, pinocchio::JointModelRX(), placement, name);
    } else if (revolute && a == Eigen::Vector3d::UnitY()) {
      id = model.addJoint(parent, pinocchio::JointModelRY(), placement, name);
    } else if (revolute && a == Eigen::Vector3d::UnitZ()) {
      id = model.addJoint(parent, pinocchio::JointModelRZ(), placement, name);
    } else if (revolute) {
      id = model.addJoint(parent, pinocchio::JointModelRevoluteUnaligned(a), placement, name);
    } else {
      id = model.addJoint(parent, pinocchio::JointModelPrismaticUnaligned(a), placement, name);
    }
    const double* J = r.inertia[i];
    Eigen::Matrix3d I;
    I << J[0], J[3], J[4], J[3], J[1], J[5], J[4], J[5], J[2];
    const Eigen::Vector3d com(r.com[i][0], r.com[i][1], r.com[i][2]);
    model.appendBodyToJoint(id, pinocchio::Inertia(r.mass[i], com, I), pinocchio::SE3::Identity());
  }
  model.gravity.linear(Eigen::Vector3d(r.gravity[0], r.gravity[1], r.gravity[2]));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size() / 2;
  return v.size() % 2 == 1 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

double rel_diff(const double* a, const double* b, int count) {
  double num = 0, den = 1e-300;
  for (int k = 0; k < count; ++k) {
    num = std::max(num, std::abs(a[k] - b[k]));
    den = std::max(den, std::abs(b[k]));
  }
  return num / den;
}

template <class Fn>
double time_per_call(int reps, int states, const Fn& fn) {
  const auto t0 = Clock::now();
  for (int k = 0; k < reps; ++k) fn(k % states);
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
}

void run(const robot::RobotModel& rm, int rounds) {
  const robot::RobotData& r = rm.data;
  const int n = r.n, nx = 2 * n;
  constexpr int kStates = 16;
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> U(-1.0, 1.0);
  std::vector<Eigen::VectorXd> qs, vs, taus;
  for (int s = 0; s < kStates; ++s) {
    Eigen::VectorXd q(n), v(n), tau(n);
    for (int i = 0; i < n; ++i) {
      q[i] = 1.5 * U(gen);
      v[i] = 2.0 * U(gen);
      tau[i] = 5.0 * U(gen);
    }
    qs.push_back(q);
    vs.push_back(v);
    taus.push_back(tau);
  }

  // Pinocchio and Crocoddyl. Their objects are built in place and kept to the end of the process,
  // never copied or destroyed: a copy or destructor compiled in this file (system Eigen, KNOT_ARCH)
  // of what the wheel built frees memory it does not own ("double free or corruption"; the cause,
  // some difference of layout between the two builds, is not pinned down). Every result is checked
  // against Knot's below.
  static std::vector<std::shared_ptr<void>> keep;
  const auto pmodel_ptr = std::make_shared<pinocchio::Model>();
  to_pinocchio(r, *pmodel_ptr);
  const pinocchio::Model& pmodel = *pmodel_ptr;
  const auto pdata_ptr = std::make_shared<pinocchio::Data>(pmodel);
  pinocchio::Data& pdata = *pdata_ptr;
  auto state = std::make_shared<crocoddyl::StateMultibody>(pmodel_ptr);
  auto actuation = std::make_shared<crocoddyl::ActuationModelFull>(state);
  auto costs = std::make_shared<crocoddyl::CostModelSum>(state, actuation->get_nu());
  auto dam = std::make_shared<crocoddyl::DifferentialActionModelFreeFwdDynamics>(state, actuation, costs);
  constexpr double dt = 0.01;
  auto iam = std::make_shared<crocoddyl::IntegratedActionModelEuler>(dam, dt);
  auto cdata = iam->createData();
  keep.insert(keep.end(), {pmodel_ptr, pdata_ptr, state, actuation, costs, dam, iam, cdata});

  // Knot.
  const knot::problems::Manipulator manip(rm);
  auto mdata = manip.make_data();
  knot::problems::Integrator integ(manip, knot::problems::IntegratorType::SemiImplicitEuler);
  auto w = std::make_unique<robot::Workspace<double>>();
  std::vector<double> qdd(n), dq(n * n), dqd(n * n), Minv(n * n), M(n * n), x(nx), xn(nx), A(nx * nx), B(nx * n);

  // Agreement at state 0.
  {
    const Eigen::VectorXd &q = qs[0], &v = vs[0], &tau = taus[0];
    robot::forward_dynamics_derivatives(r, q.data(), v.data(), tau.data(), qdd.data(), dq.data(), dqd.data(),
                                        Minv.data(), n, *w);
    pinocchio::computeABADerivatives(pmodel, pdata, q, v, tau);
    Eigen::MatrixXd pMinv = pdata.Minv;
    pMinv.triangularView<Eigen::StrictlyLower>() = pMinv.transpose();
    const Eigen::MatrixXd pdq = pdata.ddq_dq, pdqd = pdata.ddq_dv;
    robot::mass_matrix(r, q.data(), M.data(), n, *w);
    pinocchio::crba(pmodel, pdata, q);
    Eigen::MatrixXd pM = pdata.M;
    pM.triangularView<Eigen::StrictlyLower>() = pM.transpose();
    for (int i = 0; i < n; ++i) {
      x[i] = q[i];
      x[n + i] = v[i];
    }
    integ.step_jacobian(*mdata, x.data(), tau.data(), dt, xn.data(), A.data(), B.data());
    Eigen::VectorXd cx(nx);
    cx << q, v;
    iam->calc(cdata, cx, tau);
    iam->calcDiff(cdata, cx, tau);
    const Eigen::MatrixXd cFx = cdata->Fx, cFu = cdata->Fu;
    std::printf("%s (n = %d): agreement with Pinocchio/Crocoddyl, worst relative difference: qdd %.1e, "
                "dqdd/dq %.1e, dqdd/dqd %.1e, M^-1 %.1e, M %.1e, x+ %.1e, A %.1e, B %.1e\n",
                rm.name.c_str(), n, rel_diff(qdd.data(), pdata.ddq.data(), n), rel_diff(dq.data(), pdq.data(), n * n),
                rel_diff(dqd.data(), pdqd.data(), n * n), rel_diff(Minv.data(), pMinv.data(), n * n),
                rel_diff(M.data(), pM.data(), n * n), rel_diff(xn.data(), cdata->xnext.data(), nx),
                rel_diff(A.data(), cFx.data(), nx * nx), rel_diff(B.data(), cFu.data(), nx * n));
  }

  // Short batches (tens of microseconds) and many rounds: a batch the scheduler interrupts is an
  // outlier the median drops, where long ones would all carry a share of the machine's other load.
  constexpr int kReps = 100;
  std::vector<double> t_kd, t_pd, t_km, t_pm, t_pmw, t_ks, t_cs;
  double sink = 0;
  for (int round = 0; round < rounds; ++round) {
    t_kd.push_back(time_per_call(kReps, kStates, [&](int s) {
      robot::forward_dynamics_derivatives(r, qs[s].data(), vs[s].data(), taus[s].data(), qdd.data(), dq.data(),
                                          dqd.data(), Minv.data(), n, *w);
      sink += dq[0];
    }));
    t_pd.push_back(time_per_call(kReps, kStates, [&](int s) {
      pinocchio::computeABADerivatives(pmodel, pdata, qs[s], vs[s], taus[s]);
      sink += pdata.ddq_dq(0, 0);
    }));
    t_km.push_back(time_per_call(kReps, kStates, [&](int s) {
      robot::mass_matrix(r, qs[s].data(), M.data(), n, *w);
      sink += M[0];
    }));
    t_pm.push_back(time_per_call(kReps, kStates, [&](int s) {
      pinocchio::crba(pmodel, pdata, qs[s], pinocchio::Convention::LOCAL);
      sink += pdata.M(0, 0);
    }));
    t_pmw.push_back(time_per_call(kReps, kStates, [&](int s) {
      pinocchio::crba(pmodel, pdata, qs[s], pinocchio::Convention::WORLD);
      sink += pdata.M(0, 0);
    }));
    t_ks.push_back(time_per_call(kReps, kStates, [&](int s) {
      for (int i = 0; i < n; ++i) {
        x[i] = qs[s][i];
        x[n + i] = vs[s][i];
      }
      integ.step_jacobian(*mdata, x.data(), taus[s].data(), dt, xn.data(), A.data(), B.data());
      sink += A[0];
    }));
    Eigen::VectorXd cx(nx);
    t_cs.push_back(time_per_call(kReps, kStates, [&](int s) {
      cx << qs[s], vs[s];
      iam->calc(cdata, cx, taus[s]);
      iam->calcDiff(cdata, cx, taus[s]);
      sink += cdata->Fx(0, 0);
    }));
  }
  const double kd = median(t_kd), pd = median(t_pd), km = median(t_km), pm = median(t_pm), pmw = median(t_pmw),
               ks = median(t_ks), cs = median(t_cs);
  const double pbest = std::min(pm, pmw);
  std::printf("  %-44s %9s %9s %7s\n", "kernel (us per call, median of rounds)", "Knot", "anchor", "ratio");
  std::printf("  %-44s %9.3f %9.3f %7.2f\n", "fwd-dyn derivatives / computeABADerivatives", kd, pd, kd / pd);
  std::printf("  %-44s %9.3f %9.3f %7.2f   (crba LOCAL %.3f, WORLD %.3f)\n", "mass matrix / crba (faster convention)", km,
              pbest, km / pbest, pm, pmw);
  std::printf("  %-44s %9.3f %9.3f %7.2f\n", "semi-implicit Euler step+A,B / Crocoddyl", ks, cs, ks / cs);
  if (sink == 12345.678) std::printf("%g\n", sink);  // keeps the results alive
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  int rounds = 301;
  std::vector<std::string> urdfs;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::max(1, std::stoi(a.substr(9)));
    } else {
      urdfs.push_back(a);
    }
  }
  std::printf("Knot vs Pinocchio %s / Crocoddyl %s, %d interleaved rounds, medians\n", PINOCCHIO_VERSION,
              CROCODDYL_VERSION, rounds);
  for (const auto& path : urdfs) run(robot::load_urdf(path), rounds);
  run(make_chain(6), rounds);
  run(make_chain(14), rounds);
  std::fflush(stdout);
  std::_Exit(0);  // the kept Pinocchio and Crocoddyl objects are not destroyed (see run)
}
