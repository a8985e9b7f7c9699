#include "ops/op_harness.h"

#include <cmath>

#include "core/rng.h"

namespace vt::test {

Tensor random_tensor(const Shape& shape, uint64_t seed, double lo, double hi, DType dtype) {
  std::vector<double> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = lo + (hi - lo) * rng::uniform_at(seed, 0, i);
  return Tensor::from_vector(v, shape, dtype);
}

void expect_close(const std::vector<double>& actual, const std::vector<double>& expected, double atol, double rtol,
                  const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double tol = atol + rtol * std::abs(expected[i]);
    if (!(std::abs(actual[i] - expected[i]) <= tol) && reported++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << actual[i] << ", expected " << expected[i];
  }
}

void run_op_case(const OpCase& c) {
  SCOPED_TRACE(c.name);
  if (c.reference) {
    std::vector<Tensor> detached;
    for (const auto& t : c.inputs) detached.push_back(t.detach());
    expect_close(c.fn(detached).to_vector(), c.reference(detached), 1e-10, 1e-10, c.name + " forward");
  }
  GradcheckResult r = gradcheck(c.fn, c.inputs, 1e-6, c.atol, c.rtol);
  EXPECT_TRUE(r.ok) << c.name << " gradcheck: " << r.detail << " (max abs err " << r.max_abs_err << ")";
}

}  // namespace vt::test
