#!/usr/bin/env bash
# Redraws every committed figure under docs/figures from the data committed beside it (no GPU, no training):
#   fig5_mita_vs_dense  ← docs/figures/fig5_series.csv (BENCHMARKS.md's Figure 5 table)       plot_xy
#   proxy/study         ← docs/figures/proxy/study/*/seed*/metrics.jsonl (proxy_study.sh)     plot_dots
#   proxy/swap          ← docs/figures/proxy/swap.csv (vitrain eval-swap)                     plot_heatmap
#   proxy/mk_sweep      ← docs/figures/proxy/mk_sweep.csv (vitrain eval-sweep)                plot_heatmap
#   proxy/selection_map ← docs/figures/proxy/selection_counts.csv (vitrain viz experts)       plot_selection_map
# Each is written as PNG (for the documents) and SVG. The per-expert pictures (proxy/layer*_experts.png) need the
# trained proxy model's weights, which are not committed: scripts/proxy_figures.sh draws them.
# Usage: scripts/redraw_figures.sh [BIN_DIR]   (default build/bin; needs plot_xy plot_dots plot_heatmap
#        plot_selection_map and vitrain built there)
set -euo pipefail
bin=${1:-build/bin}
fig=docs/figures
"$bin/plot_xy" "$fig/fig5_series.csv" "$fig/fig5_mita_vs_dense.png" \
  --title "Figure 5: throughput against sequence length (bf16 inference, H200)" \
  --x-title "sequence length N (tokens)" --y-title "throughput (sequences/s)"
study=$(mktemp -d)
trap 'rm -rf "$study"' EXIT
VITRAIN="$bin/vitrain" PLOT_DOTS="$bin/plot_dots" RECORD="$fig/proxy/study" \
  bash scripts/proxy_study.sh /usr/share/datasets/fashion-mnist "$study" >/dev/null
cp "$study/proxy_study.png" "$fig/proxy/study.png"
cp "$study/proxy_study.svg" "$fig/proxy/study.svg"
"$bin/plot_heatmap" "$fig/proxy/swap.csv" "$fig/proxy/swap.png" --rows trained --cols evaluated --value top1 \
  --title "Top-1 (%) with the attention swapped" --row-title "trained with" --col-title "evaluated with" \
  --value-title "top-1 (%)" --decimals 2 --cell 90
"$bin/plot_heatmap" "$fig/proxy/mk_sweep.csv" "$fig/proxy/mk_sweep.png" --rows m --cols k --value top1 \
  --title "Top-1 (%) with (m, k) changed at evaluation" --row-title "m (experts)" \
  --col-title "k (keys per expert)" --value-title "top-1 (%)" --outline 25,25 --decimals 2
"$bin/plot_selection_map" "$fig/proxy/selection_counts.csv" "$fig/proxy/selection_map.png" --experts 25
