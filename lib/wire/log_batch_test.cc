#include "wire/log_batch.h"

#include <gtest/gtest.h>

namespace jobctl::wire {
namespace {

TEST(LogBatchTest, RecordsRoundTripByteForByte) {
  std::string body;
  std::string binary("a\0b\n\r\xff", 6);
  AppendLogRecord(&body, 7, "stdout", 1767225600123, binary);
  AppendLogRecord(&body, 8, "stderr", 0, "");
  AppendLogRecord(&body, 9, "marker", 0, "[dropped]\n");
  Result<std::vector<LogRecord>> r = ParseLogBatch(body);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].seq, 7);
  EXPECT_EQ((*r)[0].stream, "stdout");
  EXPECT_EQ((*r)[0].at_ms, 1767225600123);
  EXPECT_EQ((*r)[0].data, binary);
  EXPECT_EQ((*r)[1].stream, "stderr");
  EXPECT_EQ((*r)[1].data, "");
  EXPECT_EQ((*r)[2].data, "[dropped]\n");
  EXPECT_LE(body.size(), LogRecordSize(6) + LogRecordSize(0) + LogRecordSize(10));
}

TEST(LogBatchTest, HeaderOfTheLargestNumbersFitsTheLimit) {
  std::string body;
  AppendLogRecord(&body, INT64_MAX, "stdout", INT64_MAX, "");
  EXPECT_LE(body.size(), kMaxLogRecordHeader);
  EXPECT_TRUE(ParseLogBatch(body).ok());
}

TEST(LogBatchTest, MalformedBatchesAreRefusedWhole) {
  auto refused = [](std::string_view body) { return !ParseLogBatch(body).ok(); };
  EXPECT_TRUE(refused(""));
  EXPECT_TRUE(refused("1 stdout 0 5\nabc"));  // ends inside the chunk
  EXPECT_TRUE(refused("1 stdin 0 0\n"));      // unknown stream
  EXPECT_TRUE(refused("0 stdout 0 0\n"));     // seq from 1
  EXPECT_TRUE(refused("-1 stdout 0 0\n"));
  EXPECT_TRUE(refused("1 stdout -5 0\n"));
  EXPECT_TRUE(refused("1 stdout 0 0"));     // no newline
  EXPECT_TRUE(refused("1  stdout 0 0\n"));  // two spaces
  EXPECT_TRUE(refused("1 stdout 0 0 \n"));  // trailing space
  EXPECT_TRUE(refused("1 stdout 0 0x10\n"));
  EXPECT_TRUE(refused("2 stdout 0 0\n1 stdout 0 0\n"));  // seqs must ascend
  EXPECT_TRUE(refused("2 stdout 0 0\n2 stdout 0 0\n"));
  EXPECT_TRUE(refused("1 stdout 0 99999999999999999999\n"));
  EXPECT_TRUE(refused(std::string(100, '1') + " stdout 0 0\n"));
  EXPECT_FALSE(refused("1 stdout 0 3\nabc2 stderr 5 1\nx"));
}

}  // namespace
}  // namespace jobctl::wire
