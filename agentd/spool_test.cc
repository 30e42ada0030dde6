#include "spool.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

namespace jobctl::agentd {
namespace {

class SpoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/agentd-spool-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static Chunk Make(int64_t seq, size_t bytes, char fill = 'x') {
    return Chunk{ChunkStream::kStdout, 1000 + seq, std::string(bytes, fill), seq};
  }
  int64_t FilesBytes() const {
    int64_t total = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      total += static_cast<int64_t>(e.file_size());
    }
    return total;
  }

  std::string dir_;
  const AttemptKey key_{12, 0, 1};
};

TEST_F(SpoolTest, ReturnsChunksInOrderAndDeletesFilesOnceSent) {
  Spool s(dir_, 1 << 20);
  ASSERT_TRUE(s.Open().ok());
  for (int64_t i = 1; i <= 3; ++i) ASSERT_TRUE(s.Append(key_, 57, Make(i, 100)).ok());
  EXPECT_TRUE(s.Has(key_));
  for (int64_t i = 1; i <= 3; ++i) {
    Result<std::optional<Chunk>> c = s.Front(key_);
    ASSERT_TRUE(c.ok() && c->has_value());
    EXPECT_EQ((*c)->seq, i);
    EXPECT_EQ((*c)->at_ms, 1000 + i);
    EXPECT_EQ((*c)->data.size(), 100u);
    s.Pop(key_, i);
  }
  EXPECT_FALSE(s.Has(key_));
  EXPECT_EQ(s.bytes(), 0);
  EXPECT_EQ(FilesBytes(), 0);
}

TEST_F(SpoolTest, FrontWithoutPopReturnsTheSameChunk) {
  Spool s(dir_, 1 << 20);
  ASSERT_TRUE(s.Open().ok());
  ASSERT_TRUE(s.Append(key_, 57, Make(1, 10)).ok());
  ASSERT_TRUE(s.Append(key_, 57, Make(2, 10)).ok());
  EXPECT_EQ((*s.Front(key_))->seq, 1);
  EXPECT_EQ((*s.Front(key_))->seq, 1);
}

TEST_F(SpoolTest, PopAcknowledgesOnlyWhatWasHandedOut) {
  Spool s(dir_, 1 << 20);
  ASSERT_TRUE(s.Open().ok());
  for (int64_t i = 1; i <= 3; ++i) ASSERT_TRUE(s.Append(key_, 57, Make(i, 10)).ok());
  EXPECT_EQ((*s.Front(key_))->seq, 1);
  s.Pop(key_, 3);  // only 1 was handed out
  EXPECT_EQ((*s.Front(key_))->seq, 2);
}

TEST_F(SpoolTest, FrontHandsOutABatchWithinItsBudgetAcrossSegments) {
  Spool s(dir_, 1 << 20);  // segments of 128 KiB
  ASSERT_TRUE(s.Open().ok());
  const size_t chunk = 40 * 1024;
  for (int64_t i = 1; i <= 10; ++i) ASSERT_TRUE(s.Append(key_, 57, Make(i, chunk)).ok());
  Result<std::vector<Chunk>> batch = s.Front(key_, 7 * chunk);
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->size(), 7u);
  for (size_t i = 0; i < batch->size(); ++i)
    EXPECT_EQ((*batch)[i].seq, static_cast<int64_t>(i + 1));
  // A budget smaller than the first chunk still hands out that chunk.
  EXPECT_EQ(s.Front(key_, 1)->size(), 1u);
  // Handed out anew: the earlier batch no longer counts as being sent.
  batch = s.Front(key_, 7 * chunk);
  ASSERT_EQ(batch->size(), 7u);
  s.Pop(key_, 4);  // a prefix of the batch was acknowledged
  EXPECT_FALSE(s.Holds(key_, 4));
  EXPECT_TRUE(s.Holds(key_, 5));
  batch = s.Front(key_, 100 * chunk);
  ASSERT_EQ(batch->size(), 6u);
  EXPECT_EQ(batch->front().seq, 5);
  s.Pop(key_, 10);
  EXPECT_FALSE(s.Has(key_));
  EXPECT_EQ(s.bytes(), 0);
  EXPECT_EQ(FilesBytes(), 0);
}

TEST_F(SpoolTest, BatchBeingSentIsNotCountedAsDroppedWhenItsSegmentsAre) {
  Spool s(dir_, 1 << 20);
  ASSERT_TRUE(s.Open().ok());
  const size_t chunk = 64 * 1024;
  for (int64_t i = 1; i <= 4; ++i) ASSERT_TRUE(s.Append(key_, 57, Make(i, chunk)).ok());
  ASSERT_EQ(s.Front(key_, 3 * chunk)->size(), 3u);  // in flight, over two segments
  AttemptKey other{13, 0, 1};
  for (int64_t i = 1; i <= 40; ++i) ASSERT_TRUE(s.Append(other, 58, Make(i, chunk)).ok());
  // Only chunk 4, never handed out, was lost with the segments.
  EXPECT_EQ(s.TakeDropped(key_), static_cast<int64_t>(chunk));
  EXPECT_FALSE(s.Holds(key_, 1));
  s.Pop(key_, 3);  // their segments are gone: harmless
  EXPECT_FALSE(s.Has(key_));
}

TEST_F(SpoolTest, StaysWithinItsBoundByDroppingTheOldestAndCountsTheDrop) {
  const int64_t max = 1 << 20;
  Spool s(dir_, max);
  ASSERT_TRUE(s.Open().ok());
  const size_t chunk = 64 * 1024;
  for (int64_t i = 1; i <= 40; ++i) {
    ASSERT_TRUE(s.Append(key_, 57, Make(i, chunk)).ok());
    ASSERT_LE(s.bytes(), max);
    ASSERT_LE(FilesBytes(), max);
  }
  int64_t dropped = s.TakeDropped(key_);
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(dropped % static_cast<int64_t>(chunk), 0);
  // What is left is the newest chunks, in order, and together with the drop it is all.
  int64_t first = (*s.Front(key_))->seq;
  EXPECT_EQ((first - 1) * static_cast<int64_t>(chunk), dropped);
  int64_t seq = first, count = 0;
  while (true) {
    Result<std::optional<Chunk>> c = s.Front(key_);
    if (!c->has_value()) break;
    EXPECT_EQ((*c)->seq, seq);
    s.Pop(key_, seq++);
    ++count;
  }
  EXPECT_EQ(seq, 41);
  EXPECT_EQ(s.TakeDropped(key_), 0);
}

TEST_F(SpoolTest, DropsTheGloballyOldestSegmentFirst) {
  Spool s(dir_, 1 << 20);
  ASSERT_TRUE(s.Open().ok());
  AttemptKey other{13, 0, 1};
  const size_t chunk = 64 * 1024;
  for (int64_t i = 1; i <= 4; ++i) ASSERT_TRUE(s.Append(key_, 57, Make(i, chunk)).ok());
  for (int64_t i = 1; i <= 20; ++i) ASSERT_TRUE(s.Append(other, 58, Make(i, chunk)).ok());
  EXPECT_GT(s.TakeDropped(key_), 0);
}

TEST_F(SpoolTest, ChunkBeingSentIsNotCountedAsDropped) {
  Spool s(dir_, 1 << 20);
  ASSERT_TRUE(s.Open().ok());
  const size_t chunk = 64 * 1024;
  ASSERT_TRUE(s.Append(key_, 57, Make(1, chunk)).ok());
  ASSERT_EQ((*s.Front(key_))->seq, 1);  // in flight
  AttemptKey other{13, 0, 1};
  for (int64_t i = 1; i <= 40; ++i) ASSERT_TRUE(s.Append(other, 58, Make(i, chunk)).ok());
  EXPECT_EQ(s.TakeDropped(key_), 0);
  s.Pop(key_, 1);  // its segment is gone: harmless
  EXPECT_FALSE(s.Has(key_));
}

TEST_F(SpoolTest, ReopenFindsWhatWasLeftAndContinuesTheSequence) {
  {
    Spool s(dir_, 1 << 20);
    ASSERT_TRUE(s.Open().ok());
    for (int64_t i = 1; i <= 5; ++i) ASSERT_TRUE(s.Append(key_, 57, Make(i, 1000)).ok());
    ASSERT_EQ((*s.Front(key_))->seq, 1);
    s.Pop(key_, 1);
  }
  Spool again(dir_, 1 << 20);
  ASSERT_TRUE(again.Open().ok());
  std::vector<Spool::AttemptInfo> found = again.Attempts();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].key, key_);
  EXPECT_EQ(found[0].token, 57);
  EXPECT_EQ(found[0].next_seq, 6);
  // Acknowledged chunks of a segment still in use are resent; the coordinator dedups by seq.
  EXPECT_EQ((*again.Front(key_))->seq, 1);
}

TEST_F(SpoolTest, DroppedCountSurvivesAReopen) {
  {
    Spool s(dir_, 1 << 20);
    ASSERT_TRUE(s.Open().ok());
    for (int64_t i = 1; i <= 40; ++i) ASSERT_TRUE(s.Append(key_, 57, Make(i, 64 * 1024)).ok());
  }
  Spool again(dir_, 1 << 20);
  ASSERT_TRUE(again.Open().ok());
  int64_t dropped = again.TakeDropped(key_);
  EXPECT_GT(dropped, 0);
  EXPECT_EQ((*again.Front(key_))->seq - 1, dropped / (64 * 1024));
  Spool third(dir_, 1 << 20);
  ASSERT_TRUE(third.Open().ok());
  EXPECT_EQ(third.TakeDropped(key_), 0);  // taken once
}

TEST_F(SpoolTest, TornRecordAtTheEndIsCutOff) {
  {
    Spool s(dir_, 1 << 20);
    ASSERT_TRUE(s.Open().ok());
    ASSERT_TRUE(s.Append(key_, 57, Make(1, 100)).ok());
  }
  std::string path = std::filesystem::directory_iterator(dir_)->path().string();
  FILE* f = fopen(path.c_str(), "ab");
  fwrite("JCS1\0\0\0\0garbage", 1, 15, f);
  fclose(f);
  Spool again(dir_, 1 << 20);
  ASSERT_TRUE(again.Open().ok());
  EXPECT_EQ((*again.Front(key_))->seq, 1);
  again.Pop(key_, 1);
  EXPECT_FALSE(again.Has(key_));
}

TEST_F(SpoolTest, RemoveDeletesTheAttemptsFiles) {
  Spool s(dir_, 1 << 20);
  ASSERT_TRUE(s.Open().ok());
  ASSERT_TRUE(s.Append(key_, 57, Make(1, 100)).ok());
  s.Remove(key_);
  EXPECT_FALSE(s.Has(key_));
  EXPECT_EQ(FilesBytes(), 0);
}

}  // namespace
}  // namespace jobctl::agentd
