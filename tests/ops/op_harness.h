// The table-driven harness every op test uses: one OpCase row names an op, builds its inputs, and checks
//  (1) the forward against a reference computed element by element in f64, when the row gives one, and
//  (2) the analytic backward against central finite differences in f64 (gradcheck).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "ops/ops.h"

namespace vt::test {

/// A tensor of f64 values drawn uniformly from [lo, hi) with a fixed seed (distinct per call site via `seed`).
Tensor random_tensor(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0, DType dtype = DType::f64);

struct OpCase {
  std::string name;
  std::vector<Tensor> inputs;                                                // f64 (or integer index tensors)
  std::function<Tensor(const std::vector<Tensor>&)> fn;                      // the op under test
  std::function<std::vector<double>(const std::vector<Tensor>&)> reference;  // optional forward oracle
  double atol = 1e-6, rtol = 1e-5;                                           // gradcheck tolerances
};

/// Runs both checks of one row and reports failures with the row name.
void run_op_case(const OpCase& c);

/// Element-wise comparison with |a-b| <= atol + rtol·|b|.
void expect_close(const std::vector<double>& actual, const std::vector<double>& expected, double atol,
                  double rtol = 0.0, const std::string& what = "");

}  // namespace vt::test
