// Metrics JSON lines and the progress line.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "io/metrics.h"
#include "io_temp_dir.h"

namespace vt::test {
namespace {

TEST(Metrics, ProgressLineMatchesTheDocumentedFormat) {
  EXPECT_EQ(io::progress_line(1, 5, 120, 468, 1.2345, 2e-3, 1234, 192),
            "epoch 1/5 [ 120/ 468] loss 1.2345 lr 2.00e-03 1234 img/s ETA 3m12s");
  EXPECT_EQ(io::progress_line(3, 12, 7, 12345, 0.06789, 1.5e-5, 98.6, 3725),
            "epoch  3/12 [    7/12345] loss 0.0679 lr 1.50e-05 99 img/s ETA 1h02m05s");
  EXPECT_EQ(io::progress_line(10, 10, 97, 97, 2.0, 0.1, 0, 0),
            "epoch 10/10 [  97/  97] loss 2.0000 lr 1.00e-01 0 img/s ETA 0s");
}

TEST(Metrics, DurationsAndNumbers) {
  EXPECT_EQ(io::format_duration(0), "0s");
  EXPECT_EQ(io::format_duration(59.4), "59s");
  EXPECT_EQ(io::format_duration(59.6), "1m00s");
  EXPECT_EQ(io::format_duration(192), "3m12s");
  EXPECT_EQ(io::format_duration(36000 + 61), "10h01m01s");
  EXPECT_EQ(io::format_duration(-1), "?");
  EXPECT_EQ(io::format_duration(std::nan("")), "?");
  EXPECT_EQ(io::format_number(0.1), "0.1");
  EXPECT_EQ(io::format_number(120), "120");
  EXPECT_EQ(io::format_number(-2.5), "-2.5");
  EXPECT_EQ(io::format_number(1e-5), "1e-05");
  EXPECT_EQ(io::format_number(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(io::format_number(std::nan("")), "null");
  EXPECT_EQ(io::format_number(-std::numeric_limits<double>::infinity()), "null");
}

TEST(Metrics, WritesOneFlushedJsonObjectPerLine) {
  TempDir dir;
  const std::string path = dir.file("sub/dir/metrics.jsonl");  // parent directories are created
  {
    io::MetricsLog log(path);
    log.log({{"epoch", 1}, {"step", 120}, {"loss", 0.5}}, {{"phase", "train"}});
    // Flushed per line: readable while the log is still open.
    EXPECT_EQ(read_bytes(path), "{\"phase\":\"train\",\"epoch\":1,\"step\":120,\"loss\":0.5}\n");
    log.log({{"loss", std::nan("")}, {"lr", 2e-3}});
    log.log({}, {{"msg", "say \"hi\"\n"}});
    EXPECT_THROW(log.log({{"a", 1}, {"a", 2}}), Error);
  }
  EXPECT_EQ(read_bytes(path),
            "{\"phase\":\"train\",\"epoch\":1,\"step\":120,\"loss\":0.5}\n"
            "{\"loss\":null,\"lr\":0.002}\n"
            "{\"msg\":\"say \\\"hi\\\"\\n\"}\n");
  {
    io::MetricsLog again(path, /*append=*/true);
    again.log({{"x", -1}});
  }
  EXPECT_EQ(read_bytes(path).substr(read_bytes(path).rfind("{")), "{\"x\":-1}\n");
  {
    io::MetricsLog fresh(path);  // truncates
    fresh.log({{"y", 2}});
  }
  EXPECT_EQ(read_bytes(path), "{\"y\":2}\n");
  EXPECT_THROW(io::MetricsLog(path + "/x"), Error);  // parent is a file
}

}  // namespace
}  // namespace vt::test
