// Every differentiable op, for code that builds models.
#pragma once
#include "ops/attention.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/interpolate.h"
#include "ops/matmul.h"
#include "ops/mita.h"
#include "ops/nn_functional.h"
#include "ops/random.h"
#include "ops/reduce.h"
