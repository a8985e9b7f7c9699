// The paper's Appendix C at evaluation, frozen weights:
//   `vitrain eval-sweep --config C --weights W --m 16,25,36 --k 16,25,36 --out DIR`: top-1 for every (m, k)
//     → DIR/mk_sweep.csv (m,k,top1,top5,loss,images) and DIR/mk_sweep.png (m rows × k columns, Figure 10).
//   `vitrain eval-swap --config C --weights-dense W1 --weights-mita W2 --out DIR` (or `--csv F`): the 2×2 matrix
//     trained-with × evaluated-with {dense, mita} → DIR/swap.csv (trained,evaluated,top1) and DIR/swap.png
//     (Figure 9).
#pragma once
#include <CLI/CLI.hpp>

namespace vt::cli {

/// Adds the `eval-sweep` and `eval-swap` subcommands; they run from their own callbacks.
void add_eval_sweep_commands(CLI::App& app);

}  // namespace vt::cli
