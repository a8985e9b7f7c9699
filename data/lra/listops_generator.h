// ListOps expressions (Nangia & Bowman 2018) drawn as the Long Range Arena generated its release: operators
// MIN, MAX, MED (median, rounded down) and SM (sum modulo 10) over the digits 0-9 and nested lists, written in the
// release's surface form ("( ( ( [MAX 2 ) 9 ) ] )") with the value as the label.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "data/sample_rng.h"

namespace vt::data::lra {

/// LRA's generator flags (lra_benchmarks/data/listops.py) and its defaults.
struct ListOpsOptions {
  int max_depth = 10;        ///< a node at this depth is always a digit
  int max_args = 10;         ///< an operator takes 2..max_args arguments
  int64_t min_length = 500;  ///< kept only when min_length < length < max_length (LRA's strict bounds)
  int64_t max_length = 2000;
};

struct ListOpsExpression {
  std::string source;  ///< the release's surface form
  int32_t value = 0;   ///< the expression's value: the label
  int64_t length = 0;  ///< digits, operators and closing brackets (the parentheses not counted), as LRA counts
};

/// One tree as LRA draws it: at depth < max_depth a node is an operator with probability 1/4, else a digit; an
/// operator draws 2..max_args arguments and one of the four operators. Drawing stops early (the result then has
/// length >= max_length) once the tree cannot be kept.
ListOpsExpression draw_listops_tree(SampleRng& rng, const ListOpsOptions& options);

/// Example `index` of split `split` (0 train, 1 val, 2 test): trees drawn from the stream of (seed, split, index)
/// until one has a length in range. The same arguments give the same expression, whatever else is generated.
ListOpsExpression generate_listops_example(uint64_t seed, int split, int64_t index, const ListOpsOptions& options);

/// Writes `<out_dir>/listops-1000/basic_{train,val,test}.tsv` in the release's format (header "Source\tTarget",
/// Python csv's "\r\n" line ends); a listops-1000 folder that already holds files is an error. `progress(done, total)`
/// is called every few thousand examples and at the end.
void write_listops_release(const std::string& out_dir, uint64_t seed, int64_t train, int64_t val, int64_t test,
                           const ListOpsOptions& options = {},
                           const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace vt::data::lra
