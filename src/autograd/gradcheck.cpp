#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/node.h"
#include "core/rng.h"

namespace vt {

namespace {
double weighted_sum(const Tensor& out, const std::vector<double>& w) {
  std::vector<double> v = out.to_vector();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}
}  // namespace

GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, std::vector<Tensor> inputs,
                          double eps, double atol, double rtol, std::vector<size_t> check) {
  for (auto& t : inputs) {
    t = t.detach().contiguous().clone();
    if (t.dtype() == DType::f64) t.set_requires_grad(true);
  }
  if (check.empty())
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].dtype() == DType::f64) check.push_back(i);

  Tensor out = fn(inputs);
  VT_CHECK(out.dtype() == DType::f64, "[gradcheck] output must be f64, got ", out.describe());
  std::vector<double> w(static_cast<size_t>(out.numel()));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 2.0 * rng::uniform_at(1234, 0, i) - 1.0;
  out.backward(Tensor::from_vector(w, out.shape(), DType::f64));

  GradcheckResult result;
  NoGradGuard no_grad;
  for (size_t k : check) {
    Tensor& x = inputs[k];
    std::vector<double> analytic =
        x.grad().defined() ? x.grad().to_vector() : std::vector<double>(static_cast<size_t>(x.numel()), 0.0);
    double* p = x.data<double>();
    for (int64_t j = 0; j < x.numel(); ++j) {
      const double orig = p[j];
      p[j] = orig + eps;
      double plus = weighted_sum(fn(inputs), w);
      p[j] = orig - eps;
      double minus = weighted_sum(fn(inputs), w);
      p[j] = orig;
      const double numeric = (plus - minus) / (2 * eps);
      const double err = std::abs(numeric - analytic[j]);
      if (err > result.max_abs_err) result.max_abs_err = err;
      if (err > atol + rtol * std::abs(numeric) && result.ok) {
        result.ok = false;
        std::ostringstream os;
        os << "input " << k << " " << x.describe() << " element " << j << ": analytic " << analytic[j] << " numeric "
           << numeric;
        result.detail = os.str();
      }
    }
  }
  return result;
}

}  // namespace vt
