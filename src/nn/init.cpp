#include "nn/init.h"

#include <cmath>

#include "ops/random.h"

namespace vt::nn::init {

void trunc_normal(const Tensor& t, double std, Generator& gen) { ops::trunc_normal_(t, 0.0, std, -2.0, 2.0, gen); }

void default_uniform(const Tensor& t, int64_t fan_in, Generator& gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  ops::uniform_(t, -bound, bound, gen);
}

void zeros(const Tensor& t) { t.fill_(0.0); }
void ones(const Tensor& t) { t.fill_(1.0); }

}  // namespace vt::nn::init
