// Helpers shared by the MiTA tests: seeded normal inputs, comparisons, error-message checks, option builders.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "models/mita.h"
#include "tests/nn/mita_reference.h"

namespace vt::test {

inline std::vector<double> randn(int64_t n, uint64_t seed, double std = 1.0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std * rng::normal_at(seed, 0, i);
  return v;
}

inline Tensor randn_t(const Shape& shape, uint64_t seed, double std = 1.0, DType dt = DType::f64) {
  return Tensor::from_vector(randn(numel(shape), seed, std), shape, dt);
}

inline void expect_near_all(const std::vector<double>& a, const std::vector<double>& b, double tol,
                            const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > worst) worst = std::abs(a[i] - b[i]), at = i;
  EXPECT_LE(worst, tol) << what << ": element " << at << " got " << a[at] << " expected " << b[at];
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

inline void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

inline models::MitaOptions opts(int64_t heads, int64_t m, int64_t k, int64_t s, bool route, const std::string& pool,
                                const std::string& scale) {
  models::MitaOptions o;
  o.heads = heads, o.m = m, o.k = k, o.s = s, o.route_only = route, o.landmark_pool = pool, o.shared_scale = scale;
  return o;
}

inline mita_ref::Opts ref_opts(const models::MitaOptions& o) {
  return {o.heads, o.m, o.k, o.s, o.route_only, o.landmark_pool, o.shared_scale};
}

}  // namespace vt::test
