// Finite-difference gradient check in f64 (central differences), against the analytic backward.
// The output is reduced to a scalar with fixed random weights, so one backward checks a random projection
// of the whole Jacobian; every input element is perturbed.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace vt {

struct GradcheckResult {
  bool ok = true;
  double max_abs_err = 0.0;
  std::string detail;  // the worst element: "input 1 [17]: analytic 0.3 numeric 0.31"
};

/// `inputs` are f64 tensors; the floating ones get requires_grad and are checked.
/// Only inputs listed in `check` are perturbed (all floating ones when empty).
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, std::vector<Tensor> inputs,
                          double eps = 1e-6, double atol = 1e-6, double rtol = 1e-5, std::vector<size_t> check = {});

}  // namespace vt
