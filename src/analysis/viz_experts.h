// `vitrain viz experts`: the paper's Figures 3 and 4 drawn from our own MiTA model on one image. The model runs
// once under a models::MitaRoutingTap; each layer's routing (top-k keys per expert, arg-max expert per query)
// is drawn as a grid of expert panels, and the number of experts that selected each token as a map per layer.
// Either for one head, or (the paper's Figure 3) averaged over the heads: a head is std::nullopt then.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "figures/raster.h"
#include "io/config.h"
#include "models/vit.h"
#include "ops/mita.h"

namespace vt::analysis {

/// The routing of one image through every MiTA layer, on the host (batch 1).
struct ImageRouting {
  int64_t tokens = 0;  // N = 1 + G² (CLS at 0, patch (r, c) at 1 + r·G + c)
  int64_t grid = 0;    // G
  int64_t m = 0, k = 0, heads = 0;
  std::vector<ops::MitaRouting> layers;  // expert_keys [1, H, m, k], experts [1, H, N]
};

/// One image ready for the model: the normalized input [1, C, S, S] and the 8-bit picture it came from (S²).
struct VizInput {
  Tensor image;
  figures::RgbImage picture{1, 1};
};

/// Reads `path` with the evaluation transform of `cfg` (3 channels: timm's resize + center crop at
/// data.crop_pct, ImageNet normalization; 1 channel: gray, resized to the input size, Fashion-MNIST's).
VizInput load_viz_input(const io::Config& cfg, const std::string& path);

/// Runs `model` (on the device of its parameters, the input moved there) on `image` [1, C, S, S] under `amp`
/// and returns the routing of its MiTA layers. Throws naming model.attention.type when the model has no MiTA
/// attention, and when the layers did not all report their routing (only the fused path with s = 1 does).
ImageRouting record_image_routing(const models::VisionTransformer& model, const Tensor& image,
                                  std::optional<DType> amp = std::nullopt);

/// How many of head `head`'s experts selected each token, per layer: [layer][token]; each row sums to m·k.
std::vector<std::vector<int64_t>> selection_counts(const ImageRouting& routing, int64_t head);

/// selection_counts averaged over the heads: [layer][token]; each row sums to m·k.
std::vector<std::vector<double>> mean_selection_counts(const ImageRouting& routing);

/// The arg-max expert of every token for head `head` of `layer`: [N].
std::vector<int64_t> routed_experts(const ImageRouting& routing, int64_t layer, int64_t head);

/// What expert `expert` of `layer` holds, per token [N]: `key` = the share of the heads in which the token is one
/// of the expert's k keys, `query` = the share of the heads that route the token (as a query) to it, `queries` =
/// the routed queries per head. For one head (`head` set) the shares are 0 or 1; std::nullopt: over all heads.
struct ExpertShares {
  std::vector<double> key, query;
  double queries = 0;
};
ExpertShares expert_shares(const ImageRouting& routing, int64_t layer, std::optional<int64_t> head, int64_t expert);

/// Figure 8: per layer, the IoU between each expert's k selected key tokens and the query tokens routed to it,
/// averaged over the m experts of every head (an expert no query chose scores 0): [layer] in [0, 1].
std::vector<double> expert_key_query_iou(const ImageRouting& routing);

/// Figure 3 for one layer: ⌈√m⌉ columns of panels, one per expert, each the picture dimmed with the expert's k
/// keys tinted and framed orange and the queries routed to it tinted blue (a square in the panel's label strip
/// stands for the CLS token). For one head, or (std::nullopt) averaged over the heads: the tints and the dimming
/// then follow expert_shares (a token is framed when it is a key in at least half the heads) and the legend says
/// so. Writes the PNG at `path` and an SVG beside it.
void draw_expert_grid(const ImageRouting& routing, int64_t layer, std::optional<int64_t> head,
                      const figures::RgbImage& picture, const std::string& path);

/// The (width, height) of draw_expert_grid's PNG for m experts on a picture of side `picture_size`; the mean over
/// heads has one more legend line.
std::pair<int, int> expert_grid_size(int64_t m, int picture_size, bool mean_over_heads = false);

/// `--head`: "mean" (std::nullopt) or a head number; anything else is an error naming --head.
std::optional<int64_t> parse_head(const std::string& text);

struct VizExpertsOptions {
  std::string weights, image, out_dir;
  std::optional<int64_t> head;  ///< std::nullopt: averaged over the heads (the paper's Figure 3)
};

/// The whole command: builds the configured model on cfg.train.device, loads the weights (load_timm_weights),
/// runs the image and writes into out_dir: layer<i>_experts.png per layer, selection_map.png
/// (figures/selection_map.h; the head's counts, or their mean over the heads), their SVGs, selection_counts.csv
/// (layer,head,token,row,col,count; row = col = -1 for CLS; the drawn head's rows, or every head's), and Figure 8's
/// expert_iou.csv (layer,miou) with its chart expert_iou.png. Returns the paths written.
std::vector<std::string> viz_experts(const io::Config& cfg, const VizExpertsOptions& options);

}  // namespace vt::analysis
