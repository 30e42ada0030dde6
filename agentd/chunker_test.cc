#include "chunker.h"

#include <gtest/gtest.h>

namespace jobctl::agentd {
namespace {

TEST(ChunkerTest, SmallWritesWaitForTheFlush) {
  Chunker c;
  EXPECT_TRUE(c.Append(ChunkStream::kStdout, "hello ", 1000).empty());
  EXPECT_TRUE(c.Append(ChunkStream::kStdout, "world", 1100).empty());
  EXPECT_EQ(c.started_ms(), 1000);
  std::optional<Chunk> chunk = c.Flush();
  ASSERT_TRUE(chunk);
  EXPECT_EQ(chunk->data, "hello world");
  EXPECT_EQ(chunk->at_ms, 1000);
  EXPECT_TRUE(c.empty());
  EXPECT_FALSE(c.Flush());
}

TEST(ChunkerTest, CutsAtSixtyFourKibibytes) {
  Chunker c;
  std::string big(Chunker::kMaxBytes * 2 + 10, 'x');
  std::vector<Chunk> done = c.Append(ChunkStream::kStdout, big, 5);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].data.size(), Chunker::kMaxBytes);
  EXPECT_EQ(done[1].data.size(), Chunker::kMaxBytes);
  EXPECT_EQ(c.Flush()->data.size(), 10u);
}

TEST(ChunkerTest, AStreamSwitchEndsTheChunkKeepingOrder) {
  Chunker c;
  c.Append(ChunkStream::kStdout, "out1", 1);
  std::vector<Chunk> done = c.Append(ChunkStream::kStderr, "err1", 2);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].stream, ChunkStream::kStdout);
  EXPECT_EQ(done[0].data, "out1");
  std::optional<Chunk> rest = c.Flush();
  EXPECT_EQ(rest->stream, ChunkStream::kStderr);
  EXPECT_EQ(rest->at_ms, 2);
}

TEST(ChunkerTest, IsBinarySafe) {
  Chunker c;
  std::string bytes("\0\xff\x1b[31m\n\0", 8);
  c.Append(ChunkStream::kStdout, bytes, 1);
  EXPECT_EQ(c.Flush()->data, bytes);
}

}  // namespace
}  // namespace jobctl::agentd
