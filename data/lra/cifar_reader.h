// CIFAR-10's binary batches as LRA's Image task sees them: each image in grayscale, row by row, 1024 pixels.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/lra/sequence_set.h"

namespace vt::data::lra {

constexpr int64_t kCifarRecordBytes = 1 + 3 * 1024;  ///< the label, then the red, green and blue 32x32 planes
constexpr int64_t kPixelVocabSize = 257;             ///< token = pixel + 1

/// tf.image.rgb_to_grayscale on 8-bit pixels, as LRA applies it: the channels scaled to [0, 1], weighted 0.2989,
/// 0.5870, 0.1140 in float32, and converted back by multiplying by 255.5 and truncating.
uint8_t lra_gray(uint8_t r, uint8_t g, uint8_t b);

/// Records [first, first + count) of one .bin batch (count < 0: to the end), each as 1024 gray-pixel tokens cut to
/// `max_length`. A file whose size is not a whole number of records, or a label above 9, throws naming the file.
std::vector<SequenceExample> read_cifar_batch(const std::string& path, int64_t max_length, int64_t first = 0,
                                              int64_t count = -1);

}  // namespace vt::data::lra
