// Chain of masses: acados' chain-mass benchmark (examples/acados_python/chain_mass,
// export_chain_mass_model; Wirsching, Bock and Diehl 2006). M point masses in a row joined by M - 1
// springs; mass 1 is fixed at the origin, masses 2..M-1 move freely under the springs and gravity,
// and the last mass M is moved directly: its velocity is the control.
//
//   x = [positions of masses 2..M (3 each); velocities of masses 2..M-1 (3 each)]
//       nx = 3 (M - 1) + 3 (M - 2)   (21 for M = 5), metres and metres per second, z up
//   u = velocity of mass M (m/s, 3)
//   spring k joins masses k-1 and k (k = 2..M, mass 1 at the origin):
//     d_k = p_k - p_{k-1},   F_k = stiffness (1 - rest_length / |d_k|) d_k   (the pull on mass k-1)
//   p_k' = v_k (k = 2..M-1),   p_M' = u
//   v_k' = (F_{k+1} - F_k) / mass - [0; 0; gravity]   (k = 2..M-1)
//   nq = 0 (the last mass has a position but no velocity state, so x is not [q; v])
//
// Parameters (acados' get_chain_params): masses M (integer >= 3, default 5), mass 0.033 kg (each
// free mass), stiffness D 1.0 N/m, rest_length L 0.033 m, gravity 9.81 m/s^2.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "knot/linalg/config.hpp"
#include "knot/problems/model.hpp"

namespace knot::problems::models {

struct ChainOfMasses {
  struct Params {
    int masses = 5;
    double mass = 0.033;
    double stiffness = 1.0;
    double rest_length = 0.033;
    double gravity = 9.81;
  };
  Params params;

  static constexpr std::string_view kType = "chain_of_masses";
  KNOT_HD int nx() const { return 3 * (params.masses - 1) + 3 * (params.masses - 2); }
  KNOT_HD int nu() const { return 3; }
  KNOT_HD int nq() const { return 0; }

  template <class S>
  KNOT_HD void dynamics(const S* x, const S* u, S* f) const {
    const int moving = params.masses - 1;  // masses 2..M: positions x[3 i .. 3 i + 2], i = 0..moving-1
    const int n_free = params.masses - 2;  // masses 2..M-1: velocities x[3 moving + 3 i ..]
    const S* pos = x;
    const S* vel = x + 3 * moving;
    S* dpos = f;
    S* dvel = f + 3 * moving;

    for (int i = 0; i < n_free; ++i)
      for (int a = 0; a < 3; ++a) dpos[3 * i + a] = vel[3 * i + a];
    for (int a = 0; a < 3; ++a) dpos[3 * n_free + a] = u[a];

    const S inv_mass = S(1) / S(params.mass);
    for (int i = 0; i < n_free; ++i) {
      S left[3], right[3];
      spring_force(i == 0 ? nullptr : pos + 3 * (i - 1), pos + 3 * i, left);  // spring into this mass
      spring_force(pos + 3 * i, pos + 3 * (i + 1), right);                    // spring out of it
      for (int a = 0; a < 3; ++a) dvel[3 * i + a] = (right[a] - left[a]) * inv_mass;
      dvel[3 * i + 2] -= S(params.gravity);
    }
  }

  // F = D (1 - L / |d|) d for d = b - a (a = nullptr: the fixed mass at the origin).
  template <class S>
  KNOT_HD void spring_force(const S* a, const S* b, S* F) const {
    using std::sqrt;
    S d[3];
    for (int k = 0; k < 3; ++k) d[k] = a == nullptr ? b[k] : b[k] - a[k];
    const S len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    const S scale = S(params.stiffness) * (S(1) - S(params.rest_length) / len);
    for (int k = 0; k < 3; ++k) F[k] = scale * d[k];
  }

  // p2_x, p2_y, p2_z, ..., pM_z, v2_x, ..., v(M-1)_z (masses numbered from 1, the fixed one).
  std::vector<std::string> state_names() const {
    std::vector<std::string> names;
    auto add = [&](const char* prefix, int k) {
      for (const char* axis : {"_x", "_y", "_z"}) {
        std::string name = prefix;
        name.append(std::to_string(k)).append(axis);
        names.push_back(std::move(name));
      }
    };
    for (int k = 2; k <= params.masses; ++k) add("p", k);
    for (int k = 2; k < params.masses; ++k) add("v", k);
    return names;
  }
  std::vector<std::string> control_names() const { return {"u_x", "u_y", "u_z"}; }
  std::vector<ModelParameter> parameters() const {
    return {{"masses", {double(params.masses)}},
            {"mass", {params.mass}},
            {"stiffness", {params.stiffness}},
            {"rest_length", {params.rest_length}},
            {"gravity", {params.gravity}}};
  }
};

}  // namespace knot::problems::models
