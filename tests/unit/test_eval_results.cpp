// validate.py-style evaluation output: the summary line, the JSON row (timm's keys, order, rounding and number
// spelling) and the CSV row, and the results file.
#include <gtest/gtest.h>

#include "test_util.h"
#include "engine/eval_results.h"
#include "io_temp_dir.h"

namespace vt::test {
namespace {

engine::EvalResultsRow row() {
  engine::EvalResultsRow r;
  r.model = "deit_tiny_patch16_224";
  r.top1 = 72.17200000001, r.top5 = 91.0, r.loss = 1.2345678;
  r.param_count = 5'717'416;
  r.img_size = 224;
  r.crop_pct = 0.875;
  r.images = 50000;
  r.img_per_s = 1234.56;
  r.bad_files = 2;
  return r;
}

TEST(EvalResults, SummaryLineIsValidatePys) {
  EXPECT_EQ(engine::eval_summary_line(row()), " * Acc@1 72.172 (27.828) Acc@5 91.000 (9.000)");
}

TEST(EvalResults, JsonRowHasTimmsKeysInOrder) {
  const std::string pretty = engine::eval_results_json(row());
  EXPECT_EQ(pretty,
            "{\n"
            "    \"model\": \"deit_tiny_patch16_224\",\n"
            "    \"top1\": 72.172,\n"
            "    \"top1_err\": 27.828,\n"
            "    \"top5\": 91.0,\n"
            "    \"top5_err\": 9.0,\n"
            "    \"param_count\": 5.72,\n"
            "    \"img_size\": 224,\n"
            "    \"crop_pct\": 0.875,\n"
            "    \"interpolation\": \"bicubic\",\n"
            "    \"loss\": 1.2346,\n"
            "    \"images\": 50000,\n"
            "    \"bad_files\": 2,\n"
            "    \"img_per_s\": 1234.6,\n"
            "    \"amp\": false\n"
            "}");
  const std::string line = engine::eval_results_json(row(), 0);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(line,
            "{\"model\":\"deit_tiny_patch16_224\",\"top1\":72.172,\"top1_err\":27.828,\"top5\":91.0,"
            "\"top5_err\":9.0,\"param_count\":5.72,\"img_size\":224,\"crop_pct\":0.875,"
            "\"interpolation\":\"bicubic\",\"loss\":1.2346,\"images\":50000,\"bad_files\":2,"
            "\"img_per_s\":1234.6,\"amp\":false}");
}

TEST(EvalResults, CsvAndResultsFile) {
  engine::EvalResultsRow r = row();
  r.model = "a,b";
  EXPECT_EQ(engine::eval_results_csv(r),
            "model,top1,top1_err,top5,top5_err,param_count,img_size,crop_pct,interpolation,loss,images,bad_files,"
            "img_per_s,amp\n"
            "\"a,b\",72.172,27.828,91.0,9.0,5.72,224,0.875,bicubic,1.2346,50000,2,1234.6,false\n");
  TempDir dir;
  engine::write_eval_results(dir.file("r.json"), row());
  EXPECT_EQ(read_bytes(dir.file("r.json")), engine::eval_results_json(row()) + "\n");
  engine::write_eval_results(dir.file("r.csv"), row());
  EXPECT_EQ(read_bytes(dir.file("r.csv")), engine::eval_results_csv(row()));
}

}  // namespace
}  // namespace vt::test
