// The weight matrix W (n x n, symmetric positive semidefinite) of a least-squares cost term, kept
// in the form it was given so that storing, checking and applying it costs in proportion to what
// was written:
//   Scalar    W = w I        1 number        check O(1):    finite, >= 0
//   Diagonal  W = diag(d)    n numbers       check O(n):    each finite, >= 0
//   Dense     W              n x n numbers   check O(n^3):  finite, symmetric and positive
//                            (column-major)                 semidefinite, both to rounding relative
//                                                           to the largest entry (eigenvalues)
// A Scalar weight of dimension 65536 is one double; expanding it would be 32 GiB.
//
// Applying a Scalar or Diagonal weight gives bitwise the results of the same weight written as a
// Dense matrix (with finite operands): the dense sums only add exact zeros.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace knot::problems {

// What a weight's check expected and found; a cost term adds its name, the loader its position.
class WeightError : public std::invalid_argument {
 public:
  WeightError(std::string expected, std::string found);  // what(): "weights: expected ..., found ..."
  const std::string& expected() const { return expected_; }
  const std::string& found() const { return found_; }

 private:
  std::string expected_, found_;
};

class Weight {
 public:
  enum class Form { Scalar, Diagonal, Dense };

  // Each factory checks its input (the cost of the form, above) and throws WeightError.
  static Weight scalar(int n, double w);
  static Weight diagonal(std::vector<double> d);
  static Weight dense(int n, std::vector<double> W);  // column-major n x n

  Form form() const { return form_; }
  int dim() const { return n_; }
  // The number of a Scalar weight, the diagonal of a Diagonal one, the matrix of a Dense one.
  const std::vector<double>& values() const { return v_; }
  double operator()(int i, int j) const;  // W(i, j), for printing and tests
  std::size_t bytes() const { return v_.capacity() * sizeof(double); }

  // 1/2 r' W r with r = a - b.
  double half_quadratic(const double* a, const double* b) const;
  // g += W (s (a - b)): the gradient of s/2 r' W r.
  void add_gradient(const double* a, const double* b, double s, double* g) const;
  // y = W v (y and v distinct).
  void apply(const double* v, double* y) const;
  // H += s W, H n x n column-major: the touched entries only (the diagonal for Scalar and Diagonal).
  void add_to(double s, double* H) const;

 private:
  Weight(Form form, int n, std::vector<double> v) : form_(form), n_(n), v_(std::move(v)) {}
  Form form_;
  int n_;
  std::vector<double> v_;
};

const char* to_string(Weight::Form form);  // scalar, diagonal, dense

}  // namespace knot::problems
