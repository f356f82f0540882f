#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/record.hpp"

namespace cclab {

TEST(Record, CsvHeaderIsTheContract) {
  EXPECT_EQ(csv_header({}),
            "algo,collective,backend,topology,ranks,bytes,count,dtype,redop,root,inplace,time_us,algbw_gbps,"
            "busbw_gbps,wrong,device,commit,date,shape,pred_time_us,pred_busbw_gbps,error,note,nccl_estimate_us");
}

TEST(Record, BusBwFactorsFollowNcclTests) {
  EXPECT_DOUBLE_EQ(busbw_factor("allreduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor("allgather", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor("reducescatter", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor("alltoall", 2), 0.5);
  EXPECT_DOUBLE_EQ(busbw_factor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor("sol", 2), 1.0);
  Record r{.algo = "allreduce.ring", .collective = "allreduce", .ranks = 2, .bytes = 1000000, .time_us = 10};
  fill_bandwidths(r);
  EXPECT_DOUBLE_EQ(r.algbw_gbps, 100.0);
  EXPECT_DOUBLE_EQ(r.busbw_gbps, 100.0);
}

TEST(Record, CsvRoundTripsThroughAFile) {
  Record r{.algo = "allreduce.ring",
           .collective = "allreduce",
           .backend = "gpu",
           .topology = "h200x2",
           .ranks = 2,
           .bytes = 1 << 20,
           .count = 1 << 18,
           .time_us = 12.5,
           .wrong = 0,
           .device = "NVIDIA H200, x2",
           .note = "a \"quoted\", note"};
  fill_bandwidths(r);
  r.pred_time_us = 11.0;
  r.extra = {{"tflops", "12.5"}};
  auto path = (std::filesystem::temp_directory_path() / "cclab_record_test.csv").string();
  write_csv_atomic(path, {r, r});
  auto rows = read_csv(path);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].device, "NVIDIA H200, x2");
  EXPECT_EQ(rows[0].note, r.note);
  EXPECT_DOUBLE_EQ(rows[1].time_us, 12.5);
  EXPECT_NEAR(*rows[1].error(), (11.0 - 12.5) / 12.5, 1e-12);
  ASSERT_EQ(rows[0].extra.size(), 1u);
  EXPECT_EQ(rows[0].extra[0].second, "12.5");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove(path);
}

TEST(Record, NcclEstimateRoundTripsAndIsEmptyElsewhere) {
  Record nccl{.algo = "allreduce.nccl", .collective = "allreduce", .backend = "gpu", .ranks = 2, .time_us = 20};
  nccl.nccl_estimate_us = 25.5;
  Record ring{.algo = "allreduce.ring", .collective = "allreduce", .backend = "gpu", .ranks = 2, .time_us = 20};
  const std::string text = csv_text({nccl, ring});
  // The estimate is the last contract column: "...,note,25.5" and "...,note," (empty, not 0).
  EXPECT_NE(text.find(",25.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("allreduce.ring"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.substr(text.size() - 2), ",\n") << text;
  auto path = (std::filesystem::temp_directory_path() / "cclab_record_nccl.csv").string();
  write_csv_atomic(path, {nccl, ring});
  const auto rows = read_csv(path);
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_TRUE(rows[0].nccl_estimate_us.has_value());
  EXPECT_DOUBLE_EQ(*rows[0].nccl_estimate_us, 25.5);
  EXPECT_NEAR(*rows[0].nccl_error(), (25.5 - 20) / 20, 1e-12);
  EXPECT_FALSE(rows[1].nccl_estimate_us.has_value());
  EXPECT_FALSE(rows[1].nccl_error().has_value());
  EXPECT_TRUE(rows[0].extra.empty());  // a contract column, not an extra one
  std::filesystem::remove(path);
}

// Records written before the column existed (the committed results/ among them) still load.
TEST(Record, OlderRecordsWithoutTheNcclEstimateLoad) {
  auto path = (std::filesystem::temp_directory_path() / "cclab_record_old.csv").string();
  std::ofstream(path) << "algo,collective,backend,topology,ranks,bytes,count,dtype,redop,root,inplace,time_us,"
                         "algbw_gbps,busbw_gbps,wrong,device,commit,date,shape,pred_time_us,pred_busbw_gbps,error,"
                         "note,graph\n"
                         "allreduce.nccl,allreduce,gpu,h200x2,2,1024,256,float,sum,-1,0,12.5,0.08,0.08,0,"
                         "NVIDIA H200 x2,abc,2026-11-26,,,,,NCCL 2.28.9,1\n";
  const auto rows = read_csv(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].algo, "allreduce.nccl");
  EXPECT_DOUBLE_EQ(rows[0].time_us, 12.5);
  EXPECT_FALSE(rows[0].nccl_estimate_us.has_value());
  ASSERT_EQ(rows[0].extra.size(), 1u);
  EXPECT_EQ(rows[0].extra[0].first, "graph");
  std::filesystem::remove(path);
}

TEST(Record, MalformedRowNamesFileAndLine) {
  auto path = (std::filesystem::temp_directory_path() / "cclab_bad.csv").string();
  std::ofstream(path) << "algo,backend,ranks,bytes,time_us\nx,gpu,2,8,1.0\nx,gpu,2\n";
  try {
    read_csv(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":3:"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

TEST(Record, TableShowsNcclTestsColumns) {
  std::ostringstream os;
  print_table_header(os, false);
  EXPECT_NE(os.str().find("busbw"), std::string::npos);
  EXPECT_NE(os.str().find("#wrong"), std::string::npos);
}

}  // namespace cclab
