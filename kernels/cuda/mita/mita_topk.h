// MiTA expert construction on the GPU: the k largest scores of every row of an f32 matrix (one row per landmark),
// as key indices in ascending order; ties go to the lower index (the CPU kernel's rule).
#pragma once
#include <cstdint>

#include "kernels/cuda/mita/mita.h"
#include "kernels/device_handles.h"

namespace vt::kernels::cuda {

/// out [rows, k] = for each row of x [rows, N]: the indices of its k largest values, ascending. 1 ≤ k ≤ N.
void mita_topk_rows(const float* x, int32_t* out, int64_t rows, int N, int k, KernelStream stream);

/// Keys sampled per landmark row for the candidate thresholds.
constexpr int kMitaSamples = 4096;

/// candidates.threshold[row] for every landmark row from its scores against ns evenly spaced keys
/// (samples [rows, ns] f32): a score that about 2k of the row's N keys reach.
void mita_thresholds_from_samples(const float* samples, int64_t rows, int ns, const MitaShape& s,
                                  const MitaCandidates& candidates, KernelStream stream);

/// out [rows, k] from the rows' candidates (mita_topk_rows' rule); a row with fewer than k or more than cap
/// candidates is selected exactly from scores recomputed from r and k.
void mita_topk_from_candidates(const AttentionView& r, const AttentionView& k, const MitaShape& s,
                               const MitaCandidates& candidates, int32_t* out, KernelStream stream);

}  // namespace vt::kernels::cuda
