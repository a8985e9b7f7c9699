// TensorBoard event files written directly: TFRecord framing (length, masked CRC-32C of the length, payload,
// masked CRC-32C of the payload) around hand-encoded `Event` protobuf messages holding scalar `Summary` values.
// `tensorboard --logdir RUN_DIR` reads them; no TensorFlow or protobuf library is needed.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vt::io {

/// CRC-32C (Castagnoli, the checksum of TFRecord) of `data`.
uint32_t crc32c(std::string_view data);

/// TFRecord's masked CRC: rotate right by 15 bits and add 0xa282ead8.
uint32_t masked_crc32c(std::string_view data);

/// One TFRecord: 8-byte little-endian length, its masked CRC, the payload, the payload's masked CRC.
std::string tfrecord(std::string_view payload);

/// An `Event` protobuf: wall_time, step and a `Summary` of (tag, simple_value) scalars.
std::string scalar_event(double wall_time, int64_t step, const std::vector<std::pair<std::string, float>>& scalars);

/// Appends events to `DIR/events.out.tfevents.<seconds>.<host>.<pid>.<n>` (a new file per writer, as PyTorch's
/// SummaryWriter does); every record is flushed so a crash loses nothing already written.
class EventFileWriter {
 public:
  /// Creates the file and writes the `brain.Event:2` version record. `purge_step` > 0 (a resumed run) also writes
  /// a SessionLog START at that step, which tells TensorBoard to drop the points of older files from that step on
  /// (they were trained again).
  explicit EventFileWriter(const std::string& dir, int64_t purge_step = 0);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  /// One event at `step` with the given scalars (wall time: now); non-finite values are written as they are.
  void add_scalars(int64_t step, const std::vector<std::pair<std::string, float>>& scalars);

  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& payload);
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace vt::io
