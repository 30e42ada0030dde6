// Every kind of DST change (a gap when the clocks go forward, a fold when they go back) in a
// zone that moves by 1 hour (America/New_York), one that moves by 30 minutes
// (Australia/Lord_Howe) and one on a 45-minute offset (Pacific/Chatham), searched from every
// starting point around the change: well before it, the instant before it, the instant of it,
// inside it (the fold's first and second pass; a gap has no instant inside, so the instant
// after it) and after it.
//
// The reference is cronie's main loop (cron.c): it keeps a "virtual" local minute and, when
// the wall clock jumps forward by more than 5 minutes and up to 3 hours, runs the wildcard
// jobs for the current minute and the fixed-time jobs of every skipped minute; when the wall
// clock goes back it runs only wildcard jobs until it has caught up. So the rules are:
//
//   1. A fixed-time job (neither minute nor hour starts with '*') whose local time falls in
//      a gap fires at the first instant after the gap.
//   2. Several of its times in one gap merge into that one fire. Here jobctl differs from
//      cronie on purpose: cronie starts the job once per skipped time, all at the same
//      moment; a jobctl run is identified by its fire instant, so there is one.
//   3. A fixed-time job whose local time is repeated by a fold fires once, in the first pass.
//   4. A wildcard job fires at every real instant whose local time matches: times in a gap
//      do not happen, times in a fold happen twice.
//
// The tables spell out the fires for each case; CronieLoopAgreesFromEveryStartAroundTheChange
// then replays cronie's loop minute by minute and checks that Next() agrees from every start
// around each change.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string_view>

#include "model/schedule_testing.h"

namespace jobctl {
namespace {

using testing::NextFires;

struct Edge {
  const char* zone;
  const char* expr;
  const char* from;
  const char* fires;  // the expected next fires, space-separated
};

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

void ExpectEdges(const std::vector<Edge>& table) {
  for (const Edge& e : table) {
    std::vector<std::string> want = Words(e.fires);
    EXPECT_EQ(NextFires({.expr = e.expr,
                         .from = e.from,
                         .zone = e.zone,
                         .count = static_cast<int>(want.size())}),
              want)
        << e.zone << " '" << e.expr << "' from " << e.from;
  }
}

// ---- Gaps --------------------------------------------------------------------------------

// America/New_York, 2024-03-10: 02:00 EST -> 03:00 EDT at 07:00:00Z.
constexpr char kNy[] = "America/New_York";
constexpr char kNyGapBefore[] = "2024-03-10T01:00:00-05:00";
constexpr char kNyGapInstantBefore[] = "2024-03-10T01:59:59-05:00";
constexpr char kNyGapAt[] = "2024-03-10T03:00:00-04:00";
constexpr char kNyGapJustAfter[] = "2024-03-10T03:00:01-04:00";
constexpr char kNyGapAfter[] = "2024-03-10T04:00:00-04:00";

TEST(ScheduleDstEdgesTest, NewYorkGap) {
  ExpectEdges({
      // Rule 1: one time in the gap.
      {kNy, "30 2 * * *", kNyGapBefore, "2024-03-10T03:00:00-04:00 2024-03-11T02:30:00-04:00"},
      {kNy, "30 2 * * *", kNyGapInstantBefore,
       "2024-03-10T03:00:00-04:00 2024-03-11T02:30:00-04:00"},  // issue 19
      {kNy, "30 2 * * *", kNyGapAt, "2024-03-11T02:30:00-04:00 2024-03-12T02:30:00-04:00"},
      {kNy, "30 2 * * *", kNyGapJustAfter, "2024-03-11T02:30:00-04:00"},
      {kNy, "30 2 * * *", kNyGapAfter, "2024-03-11T02:30:00-04:00"},
      // The gap's first local minute is in it too.
      {kNy, "0 2 * * *", kNyGapInstantBefore,
       "2024-03-10T03:00:00-04:00 2024-03-11T02:00:00-04:00"},
      // Rule 2: a list in the gap merges into one fire.
      {kNy, "0,30 2 * * *", kNyGapBefore, "2024-03-10T03:00:00-04:00 2024-03-11T02:00:00-04:00"},
      {kNy, "0,30 2 * * *", kNyGapInstantBefore,
       "2024-03-10T03:00:00-04:00 2024-03-11T02:00:00-04:00"},
      {kNy, "0,30 2 * * *", kNyGapAt, "2024-03-11T02:00:00-04:00 2024-03-11T02:30:00-04:00"},
      {kNy, "0,30 2 * * *", kNyGapAfter, "2024-03-11T02:00:00-04:00"},
      // One time in the gap and one after it: both fire.
      {kNy, "30 2,3 * * *", kNyGapBefore, "2024-03-10T03:00:00-04:00 2024-03-10T03:30:00-04:00"},
      {kNy, "30 2,3 * * *", kNyGapInstantBefore,
       "2024-03-10T03:00:00-04:00 2024-03-10T03:30:00-04:00"},
      {kNy, "30 2,3 * * *", kNyGapAt, "2024-03-10T03:30:00-04:00 2024-03-11T02:30:00-04:00"},
      {kNy, "30 2,3 * * *", kNyGapJustAfter, "2024-03-10T03:30:00-04:00 2024-03-11T02:30:00-04:00"},
      {kNy, "30 2,3 * * *", kNyGapAfter, "2024-03-11T02:30:00-04:00 2024-03-11T03:30:00-04:00"},
      // A time at the gap's end exists and fires once, at the same instant.
      {kNy, "0 3 * * *", kNyGapInstantBefore,
       "2024-03-10T03:00:00-04:00 2024-03-11T03:00:00-04:00"},
      {kNy, "0 3 * * *", kNyGapAt, "2024-03-11T03:00:00-04:00"},
      // Rule 4: wildcard jobs skip the gap's times.
      {kNy, "*/30 * * * *", kNyGapBefore,
       "2024-03-10T01:30:00-05:00 2024-03-10T03:00:00-04:00 2024-03-10T03:30:00-04:00"},
      {kNy, "*/30 * * * *", kNyGapInstantBefore,
       "2024-03-10T03:00:00-04:00 2024-03-10T03:30:00-04:00"},
      {kNy, "*/30 * * * *", kNyGapAt, "2024-03-10T03:30:00-04:00 2024-03-10T04:00:00-04:00"},
      {kNy, "*/30 * * * *", kNyGapJustAfter, "2024-03-10T03:30:00-04:00"},
      {kNy, "*/30 * * * *", kNyGapAfter, "2024-03-10T04:30:00-04:00"},
      {kNy, "30 * * * *", kNyGapBefore, "2024-03-10T01:30:00-05:00 2024-03-10T03:30:00-04:00"},
      {kNy, "30 * * * *", kNyGapInstantBefore,
       "2024-03-10T03:30:00-04:00 2024-03-10T04:30:00-04:00"},
      {kNy, "* 2 * * *", kNyGapBefore, "2024-03-11T02:00:00-04:00 2024-03-11T02:01:00-04:00"},
      {kNy, "* 2 * * *", kNyGapInstantBefore, "2024-03-11T02:00:00-04:00"},
      {kNy, "* 2 * * *", kNyGapAt, "2024-03-11T02:00:00-04:00"},
  });
}

// Australia/Lord_Howe, 2024-10-06: 02:00 +10:30 -> 02:30 +11:00 at 2024-10-05T15:30:00Z.
constexpr char kLh[] = "Australia/Lord_Howe";
constexpr char kLhGapBefore[] = "2024-10-06T01:00:00+10:30";
constexpr char kLhGapInstantBefore[] = "2024-10-06T01:59:59+10:30";
constexpr char kLhGapAt[] = "2024-10-06T02:30:00+11:00";
constexpr char kLhGapJustAfter[] = "2024-10-06T02:30:01+11:00";
constexpr char kLhGapAfter[] = "2024-10-06T03:30:00+11:00";

TEST(ScheduleDstEdgesTest, LordHoweHalfHourGap) {
  ExpectEdges({
      {kLh, "15 2 * * *", kLhGapBefore, "2024-10-06T02:30:00+11:00 2024-10-07T02:15:00+11:00"},
      {kLh, "15 2 * * *", kLhGapInstantBefore,
       "2024-10-06T02:30:00+11:00 2024-10-07T02:15:00+11:00"},
      {kLh, "15 2 * * *", kLhGapAt, "2024-10-07T02:15:00+11:00 2024-10-08T02:15:00+11:00"},
      {kLh, "15 2 * * *", kLhGapJustAfter, "2024-10-07T02:15:00+11:00"},
      {kLh, "15 2 * * *", kLhGapAfter, "2024-10-07T02:15:00+11:00"},
      {kLh, "0,15 2 * * *", kLhGapInstantBefore,
       "2024-10-06T02:30:00+11:00 2024-10-07T02:00:00+11:00"},
      {kLh, "0,15 2 * * *", kLhGapAt, "2024-10-07T02:00:00+11:00 2024-10-07T02:15:00+11:00"},
      {kLh, "15,45 2 * * *", kLhGapBefore, "2024-10-06T02:30:00+11:00 2024-10-06T02:45:00+11:00"},
      {kLh, "15,45 2 * * *", kLhGapInstantBefore,
       "2024-10-06T02:30:00+11:00 2024-10-06T02:45:00+11:00"},
      {kLh, "15,45 2 * * *", kLhGapAt, "2024-10-06T02:45:00+11:00 2024-10-07T02:15:00+11:00"},
      {kLh, "15,45 2 * * *", kLhGapAfter, "2024-10-07T02:15:00+11:00 2024-10-07T02:45:00+11:00"},
      {kLh, "30 2 * * *", kLhGapInstantBefore,
       "2024-10-06T02:30:00+11:00 2024-10-07T02:30:00+11:00"},
      {kLh, "30 2 * * *", kLhGapAt, "2024-10-07T02:30:00+11:00"},
      {kLh, "*/15 * * * *", kLhGapBefore, "2024-10-06T01:15:00+10:30 2024-10-06T01:30:00+10:30"},
      {kLh, "*/15 * * * *", kLhGapInstantBefore,
       "2024-10-06T02:30:00+11:00 2024-10-06T02:45:00+11:00"},
      {kLh, "*/15 * * * *", kLhGapAt, "2024-10-06T02:45:00+11:00 2024-10-06T03:00:00+11:00"},
      {kLh, "*/15 * * * *", kLhGapJustAfter, "2024-10-06T02:45:00+11:00"},
      {kLh, "*/15 * * * *", kLhGapAfter, "2024-10-06T03:45:00+11:00"},
      // Half of hour 2 exists that day.
      {kLh, "* 2 * * *", kLhGapBefore, "2024-10-06T02:30:00+11:00 2024-10-06T02:31:00+11:00"},
      {kLh, "* 2 * * *", kLhGapInstantBefore, "2024-10-06T02:30:00+11:00"},
      {kLh, "* 2 * * *", kLhGapAt, "2024-10-06T02:31:00+11:00"},
      {kLh, "* 2 * * *", kLhGapAfter, "2024-10-07T02:00:00+11:00"},
      {kLh, "15 * * * *", kLhGapBefore, "2024-10-06T01:15:00+10:30 2024-10-06T03:15:00+11:00"},
      {kLh, "15 * * * *", kLhGapInstantBefore, "2024-10-06T03:15:00+11:00"},
  });
}

// Pacific/Chatham, 2024-09-29: 02:45 +12:45 -> 03:45 +13:45 at 2024-09-28T14:00:00Z.
constexpr char kCh[] = "Pacific/Chatham";
constexpr char kChGapBefore[] = "2024-09-29T02:00:00+12:45";
constexpr char kChGapInstantBefore[] = "2024-09-29T02:44:59+12:45";
constexpr char kChGapAt[] = "2024-09-29T03:45:00+13:45";
constexpr char kChGapJustAfter[] = "2024-09-29T03:45:01+13:45";
constexpr char kChGapAfter[] = "2024-09-29T04:45:00+13:45";

TEST(ScheduleDstEdgesTest, ChathamGapOnAQuarterHourOffset) {
  ExpectEdges({
      {kCh, "0 3 * * *", kChGapBefore, "2024-09-29T03:45:00+13:45 2024-09-30T03:00:00+13:45"},
      {kCh, "0 3 * * *", kChGapInstantBefore,
       "2024-09-29T03:45:00+13:45 2024-09-30T03:00:00+13:45"},
      {kCh, "0 3 * * *", kChGapAt, "2024-09-30T03:00:00+13:45 2024-10-01T03:00:00+13:45"},
      {kCh, "0 3 * * *", kChGapJustAfter, "2024-09-30T03:00:00+13:45"},
      {kCh, "0 3 * * *", kChGapAfter, "2024-09-30T03:00:00+13:45"},
      {kCh, "50 2 * * *", kChGapInstantBefore,
       "2024-09-29T03:45:00+13:45 2024-09-30T02:50:00+13:45"},
      {kCh, "0,30 3 * * *", kChGapBefore, "2024-09-29T03:45:00+13:45 2024-09-30T03:00:00+13:45"},
      {kCh, "0,30 3 * * *", kChGapInstantBefore,
       "2024-09-29T03:45:00+13:45 2024-09-30T03:00:00+13:45"},
      {kCh, "0,30 3 * * *", kChGapAt, "2024-09-30T03:00:00+13:45 2024-09-30T03:30:00+13:45"},
      {kCh, "0 3,4 * * *", kChGapInstantBefore,
       "2024-09-29T03:45:00+13:45 2024-09-29T04:00:00+13:45"},
      {kCh, "0 3,4 * * *", kChGapAt, "2024-09-29T04:00:00+13:45 2024-09-30T03:00:00+13:45"},
      {kCh, "0 3,4 * * *", kChGapJustAfter, "2024-09-29T04:00:00+13:45"},
      {kCh, "0 3,4 * * *", kChGapAfter, "2024-09-30T03:00:00+13:45 2024-09-30T04:00:00+13:45"},
      {kCh, "45 3 * * *", kChGapInstantBefore,
       "2024-09-29T03:45:00+13:45 2024-09-30T03:45:00+13:45"},
      {kCh, "45 3 * * *", kChGapAt, "2024-09-30T03:45:00+13:45"},
      {kCh, "*/30 * * * *", kChGapBefore, "2024-09-29T02:30:00+12:45 2024-09-29T04:00:00+13:45"},
      {kCh, "*/30 * * * *", kChGapInstantBefore,
       "2024-09-29T04:00:00+13:45 2024-09-29T04:30:00+13:45"},
      {kCh, "*/30 * * * *", kChGapAt, "2024-09-29T04:00:00+13:45"},
      {kCh, "*/30 * * * *", kChGapAfter, "2024-09-29T05:00:00+13:45"},
      {kCh, "* 3 * * *", kChGapBefore, "2024-09-29T03:45:00+13:45 2024-09-29T03:46:00+13:45"},
      {kCh, "* 3 * * *", kChGapAt, "2024-09-29T03:46:00+13:45"},
      {kCh, "* 3 * * *", kChGapAfter, "2024-09-30T03:00:00+13:45"},
      {kCh, "0 * * * *", kChGapBefore, "2024-09-29T04:00:00+13:45 2024-09-29T05:00:00+13:45"},
  });
}

// ---- Folds -------------------------------------------------------------------------------

// America/New_York, 2024-11-03: 02:00 EDT -> 01:00 EST at 06:00:00Z; 01:00-02:00 twice.
constexpr char kNyFoldBefore[] = "2024-11-03T00:30:00-04:00";
constexpr char kNyFoldFirstPass[] = "2024-11-03T01:15:00-04:00";
constexpr char kNyFoldInstantBefore[] = "2024-11-03T01:59:59-04:00";
constexpr char kNyFoldAt[] = "2024-11-03T01:00:00-05:00";
constexpr char kNyFoldSecondPass[] = "2024-11-03T01:15:00-05:00";
constexpr char kNyFoldAfter[] = "2024-11-03T02:00:00-05:00";

TEST(ScheduleDstEdgesTest, NewYorkFold) {
  ExpectEdges({
      // Rule 3: a repeated time fires in the first pass only.
      {kNy, "30 1 * * *", kNyFoldBefore, "2024-11-03T01:30:00-04:00 2024-11-04T01:30:00-05:00"},
      {kNy, "30 1 * * *", kNyFoldFirstPass, "2024-11-03T01:30:00-04:00 2024-11-04T01:30:00-05:00"},
      {kNy, "30 1 * * *", kNyFoldInstantBefore, "2024-11-04T01:30:00-05:00"},
      {kNy, "30 1 * * *", kNyFoldAt, "2024-11-04T01:30:00-05:00"},
      {kNy, "30 1 * * *", kNyFoldSecondPass, "2024-11-04T01:30:00-05:00"},
      {kNy, "30 1 * * *", kNyFoldAfter, "2024-11-04T01:30:00-05:00"},
      // The fold's first local minute, reached again at the instant of the change.
      {kNy, "0 1 * * *", kNyFoldBefore, "2024-11-03T01:00:00-04:00 2024-11-04T01:00:00-05:00"},
      {kNy, "0 1 * * *", kNyFoldInstantBefore, "2024-11-04T01:00:00-05:00"},
      {kNy, "0,30 1 * * *", kNyFoldBefore,
       "2024-11-03T01:00:00-04:00 2024-11-03T01:30:00-04:00 2024-11-04T01:00:00-05:00"},
      {kNy, "0,30 1 * * *", kNyFoldFirstPass,
       "2024-11-03T01:30:00-04:00 2024-11-04T01:00:00-05:00"},
      {kNy, "0,30 1 * * *", kNyFoldAt, "2024-11-04T01:00:00-05:00"},
      {kNy, "0,30 1 * * *", kNyFoldSecondPass, "2024-11-04T01:00:00-05:00"},
      // The fold's end happens once (02:00 EDT never shows).
      {kNy, "0 2 * * *", kNyFoldBefore, "2024-11-03T02:00:00-05:00 2024-11-04T02:00:00-05:00"},
      {kNy, "0 2 * * *", kNyFoldInstantBefore, "2024-11-03T02:00:00-05:00"},
      {kNy, "0 2 * * *", kNyFoldSecondPass, "2024-11-03T02:00:00-05:00"},
      {kNy, "0 2 * * *", kNyFoldAfter, "2024-11-04T02:00:00-05:00"},
      // Rule 4: wildcard jobs fire in both passes.
      {kNy, "*/30 * * * *", kNyFoldBefore,
       "2024-11-03T01:00:00-04:00 2024-11-03T01:30:00-04:00 2024-11-03T01:00:00-05:00"},
      {kNy, "*/30 * * * *", kNyFoldFirstPass,
       "2024-11-03T01:30:00-04:00 2024-11-03T01:00:00-05:00 2024-11-03T01:30:00-05:00"},
      {kNy, "*/30 * * * *", kNyFoldInstantBefore,
       "2024-11-03T01:00:00-05:00 2024-11-03T01:30:00-05:00 2024-11-03T02:00:00-05:00"},
      {kNy, "*/30 * * * *", kNyFoldAt, "2024-11-03T01:30:00-05:00 2024-11-03T02:00:00-05:00"},
      {kNy, "*/30 * * * *", kNyFoldSecondPass, "2024-11-03T01:30:00-05:00"},
      {kNy, "*/30 * * * *", kNyFoldAfter, "2024-11-03T02:30:00-05:00"},
      {kNy, "30 * * * *", kNyFoldBefore, "2024-11-03T01:30:00-04:00 2024-11-03T01:30:00-05:00"},
      {kNy, "30 * * * *", kNyFoldInstantBefore,
       "2024-11-03T01:30:00-05:00 2024-11-03T02:30:00-05:00"},
      {kNy, "*/20 1 * * *", kNyFoldInstantBefore,
       "2024-11-03T01:00:00-05:00 2024-11-03T01:20:00-05:00 2024-11-03T01:40:00-05:00 "
       "2024-11-04T01:00:00-05:00"},
      {kNy, "*/20 1 * * *", kNyFoldSecondPass,
       "2024-11-03T01:20:00-05:00 2024-11-03T01:40:00-05:00"},
  });
}

// Australia/Lord_Howe, 2024-04-07: 02:00 +11:00 -> 01:30 +10:30 at 2024-04-06T15:00:00Z;
// 01:30-02:00 twice.
constexpr char kLhFoldBefore[] = "2024-04-07T01:00:00+11:00";
constexpr char kLhFoldFirstPass[] = "2024-04-07T01:40:00+11:00";
constexpr char kLhFoldInstantBefore[] = "2024-04-07T01:59:59+11:00";
constexpr char kLhFoldAt[] = "2024-04-07T01:30:00+10:30";
constexpr char kLhFoldSecondPass[] = "2024-04-07T01:40:00+10:30";
constexpr char kLhFoldAfter[] = "2024-04-07T02:00:00+10:30";

TEST(ScheduleDstEdgesTest, LordHoweHalfHourFold) {
  ExpectEdges({
      {kLh, "45 1 * * *", kLhFoldBefore, "2024-04-07T01:45:00+11:00 2024-04-08T01:45:00+10:30"},
      {kLh, "45 1 * * *", kLhFoldFirstPass, "2024-04-07T01:45:00+11:00 2024-04-08T01:45:00+10:30"},
      {kLh, "45 1 * * *", kLhFoldInstantBefore, "2024-04-08T01:45:00+10:30"},
      {kLh, "45 1 * * *", kLhFoldAt, "2024-04-08T01:45:00+10:30"},
      {kLh, "45 1 * * *", kLhFoldSecondPass, "2024-04-08T01:45:00+10:30"},
      {kLh, "45 1 * * *", kLhFoldAfter, "2024-04-08T01:45:00+10:30"},
      {kLh, "30,45 1 * * *", kLhFoldBefore,
       "2024-04-07T01:30:00+11:00 2024-04-07T01:45:00+11:00 2024-04-08T01:30:00+10:30"},
      {kLh, "30,45 1 * * *", kLhFoldFirstPass,
       "2024-04-07T01:45:00+11:00 2024-04-08T01:30:00+10:30"},
      {kLh, "30,45 1 * * *", kLhFoldInstantBefore, "2024-04-08T01:30:00+10:30"},
      {kLh, "0 2 * * *", kLhFoldBefore, "2024-04-07T02:00:00+10:30 2024-04-08T02:00:00+10:30"},
      {kLh, "0 2 * * *", kLhFoldInstantBefore, "2024-04-07T02:00:00+10:30"},
      {kLh, "0 2 * * *", kLhFoldSecondPass, "2024-04-07T02:00:00+10:30"},
      {kLh, "0 2 * * *", kLhFoldAfter, "2024-04-08T02:00:00+10:30"},
      {kLh, "*/15 * * * *", kLhFoldBefore,
       "2024-04-07T01:15:00+11:00 2024-04-07T01:30:00+11:00 2024-04-07T01:45:00+11:00 "
       "2024-04-07T01:30:00+10:30 2024-04-07T01:45:00+10:30 2024-04-07T02:00:00+10:30"},
      {kLh, "*/15 * * * *", kLhFoldFirstPass,
       "2024-04-07T01:45:00+11:00 2024-04-07T01:30:00+10:30"},
      {kLh, "*/15 * * * *", kLhFoldInstantBefore,
       "2024-04-07T01:30:00+10:30 2024-04-07T01:45:00+10:30"},
      {kLh, "*/15 * * * *", kLhFoldAt, "2024-04-07T01:45:00+10:30 2024-04-07T02:00:00+10:30"},
      {kLh, "*/15 * * * *", kLhFoldSecondPass, "2024-04-07T01:45:00+10:30"},
      {kLh, "*/15 * * * *", kLhFoldAfter, "2024-04-07T02:15:00+10:30"},
      {kLh, "45 * * * *", kLhFoldBefore,
       "2024-04-07T01:45:00+11:00 2024-04-07T01:45:00+10:30 2024-04-07T02:45:00+10:30"},
      {kLh, "*/10 1 * * *", kLhFoldInstantBefore,
       "2024-04-07T01:30:00+10:30 2024-04-07T01:40:00+10:30 2024-04-07T01:50:00+10:30 "
       "2024-04-08T01:00:00+10:30"},
  });
}

// Pacific/Chatham, 2024-04-07: 03:45 +13:45 -> 02:45 +12:45 at 2024-04-06T14:00:00Z;
// 02:45-03:45 twice.
constexpr char kChFoldBefore[] = "2024-04-07T02:00:00+13:45";
constexpr char kChFoldFirstPass[] = "2024-04-07T03:00:00+13:45";
constexpr char kChFoldInstantBefore[] = "2024-04-07T03:44:59+13:45";
constexpr char kChFoldAt[] = "2024-04-07T02:45:00+12:45";
constexpr char kChFoldSecondPass[] = "2024-04-07T03:00:00+12:45";
constexpr char kChFoldAfter[] = "2024-04-07T03:45:00+12:45";

TEST(ScheduleDstEdgesTest, ChathamFoldOnAQuarterHourOffset) {
  ExpectEdges({
      {kCh, "0 3 * * *", kChFoldBefore, "2024-04-07T03:00:00+13:45 2024-04-08T03:00:00+12:45"},
      {kCh, "0 3 * * *", kChFoldFirstPass, "2024-04-08T03:00:00+12:45"},
      {kCh, "0 3 * * *", kChFoldInstantBefore, "2024-04-08T03:00:00+12:45"},
      {kCh, "0 3 * * *", kChFoldAt, "2024-04-08T03:00:00+12:45"},
      {kCh, "0 3 * * *", kChFoldSecondPass, "2024-04-08T03:00:00+12:45"},
      {kCh, "0 3 * * *", kChFoldAfter, "2024-04-08T03:00:00+12:45"},
      {kCh, "0,30 3 * * *", kChFoldBefore,
       "2024-04-07T03:00:00+13:45 2024-04-07T03:30:00+13:45 2024-04-08T03:00:00+12:45"},
      {kCh, "0,30 3 * * *", kChFoldFirstPass,
       "2024-04-07T03:30:00+13:45 2024-04-08T03:00:00+12:45"},
      {kCh, "0,30 3 * * *", kChFoldSecondPass, "2024-04-08T03:00:00+12:45"},
      // The fold's first local minute.
      {kCh, "45 2 * * *", kChFoldBefore, "2024-04-07T02:45:00+13:45 2024-04-08T02:45:00+12:45"},
      {kCh, "45 2 * * *", kChFoldInstantBefore, "2024-04-08T02:45:00+12:45"},
      // The fold's end happens once.
      {kCh, "45 3 * * *", kChFoldBefore, "2024-04-07T03:45:00+12:45 2024-04-08T03:45:00+12:45"},
      {kCh, "45 3 * * *", kChFoldInstantBefore, "2024-04-07T03:45:00+12:45"},
      {kCh, "45 3 * * *", kChFoldSecondPass, "2024-04-07T03:45:00+12:45"},
      {kCh, "45 3 * * *", kChFoldAfter, "2024-04-08T03:45:00+12:45"},
      {kCh, "*/30 * * * *", kChFoldBefore,
       "2024-04-07T02:30:00+13:45 2024-04-07T03:00:00+13:45 2024-04-07T03:30:00+13:45 "
       "2024-04-07T03:00:00+12:45 2024-04-07T03:30:00+12:45 2024-04-07T04:00:00+12:45"},
      {kCh, "*/30 * * * *", kChFoldInstantBefore,
       "2024-04-07T03:00:00+12:45 2024-04-07T03:30:00+12:45"},
      {kCh, "*/30 * * * *", kChFoldAt, "2024-04-07T03:00:00+12:45"},
      {kCh, "*/30 * * * *", kChFoldSecondPass, "2024-04-07T03:30:00+12:45"},
      {kCh, "*/30 * * * *", kChFoldAfter, "2024-04-07T04:00:00+12:45"},
      {kCh, "0 * * * *", kChFoldBefore,
       "2024-04-07T03:00:00+13:45 2024-04-07T03:00:00+12:45 2024-04-07T04:00:00+12:45"},
      {kCh, "0 * * * *", kChFoldInstantBefore,
       "2024-04-07T03:00:00+12:45 2024-04-07T04:00:00+12:45"},
  });
}

// ---- cronie's loop -----------------------------------------------------------------------

// The instants (unix seconds) at which cronie's main loop, running since `start`, starts a
// job in [start, end), one per instant (rule 2). A port of the loop's DST cases: it keeps a
// virtual local minute; a jump forward of 6 to 180 minutes runs the wildcard jobs of the
// current minute and the fixed-time jobs of every skipped minute; a jump back runs only
// wildcard jobs and leaves the virtual minute alone until the clock catches up.
std::vector<int64_t> CronieFires(const CronExpr& cron, bool wildcard, const Zone& zone,
                                 int64_t start, int64_t end) {
  auto local_minute = [&zone](int64_t unix_s) {
    return (unix_s + zone.SegmentAt(unix_s).offset_s) / 60;
  };
  auto matches = [&cron](int64_t minute) { return cron.NextAtOrAfter(minute * 60) == minute * 60; };
  std::vector<int64_t> fires;
  auto fire = [&fires](int64_t at) {
    if (fires.empty() || fires.back() != at) fires.push_back(at);
  };
  int64_t virtual_minute = local_minute(start);
  for (int64_t now = start + 60; now < end; now += 60) {
    const int64_t running = local_minute(now);
    const int64_t diff = running - virtual_minute;
    if (diff == 1) {
      virtual_minute = running;
      if (matches(running)) fire(now);
    } else if (diff > 5 && diff <= 180) {
      if (wildcard && matches(running)) fire(now);
      while (virtual_minute < running) {
        ++virtual_minute;
        if (!wildcard && matches(virtual_minute)) fire(now);
      }
    } else if (diff <= 0 && diff >= -180) {
      if (wildcard && matches(running)) fire(now);
    } else {
      ADD_FAILURE() << "clock jump the test does not model: " << diff << " minutes";
      return fires;
    }
  }
  return fires;
}

TEST(ScheduleDstEdgesTest, CronieLoopAgreesFromEveryStartAroundTheChange) {
  // The instant of each change (unix seconds).
  const struct {
    const char* zone;
    int64_t change;
  } kChanges[] = {
      {"America/New_York", 1710054000},     // 2024-03-10T07:00:00Z, gap
      {"America/New_York", 1730613600},     // 2024-11-03T06:00:00Z, fold
      {"Australia/Lord_Howe", 1728142200},  // 2024-10-05T15:30:00Z, gap
      {"Australia/Lord_Howe", 1712415600},  // 2024-04-06T15:00:00Z, fold
      {"Pacific/Chatham", 1727532000},      // 2024-09-28T14:00:00Z, gap
      {"Pacific/Chatham", 1712412000},      // 2024-04-06T14:00:00Z, fold
  };
  const char* const kExprs[] = {
      "0 * * * *",    "15 * * * *",     "30 * * * *",     "45 * * * *",     "*/15 * * * *",
      "* * * * *",    "0 1 * * *",      "30 1 * * *",     "45 1 * * *",     "0 2 * * *",
      "15 2 * * *",   "30 2 * * *",     "45 2 * * *",     "50 2 * * *",     "0 3 * * *",
      "30 3 * * *",   "45 3 * * *",     "0,30 1-3 * * *", "*/10 1-3 * * *", "* 2 * * *",
      "10 1-4 * * *", "0 0-23/2 * * *",
  };
  for (const auto& change : kChanges) {
    const Zone* zone = *LookupZone(change.zone);
    for (const char* expr : kExprs) {
      Result<Schedule> schedule = Schedule::Parse({.expr = expr, .timezone = change.zone});
      Result<CronExpr> cron = CronExpr::Parse(expr, {});
      ASSERT_TRUE(schedule.ok() && cron.ok()) << expr;
      // cronie's own test: the minute or the hour field begins with '*'.
      const std::vector<std::string> fields = Words(expr);
      const bool wildcard = fields[0][0] == '*' || fields[1][0] == '*';
      // cronie has run for a while before the window; the fires cover a day after it.
      const int64_t window = 3 * 3600;
      std::vector<int64_t> cronie = CronieFires(*cron, wildcard, *zone, change.change - 2 * window,
                                                change.change + 30 * 3600);
      // The instants next to the change, and starts every 53 s (so at every second of the
      // minute in turn) for three hours either side.
      std::vector<int64_t> starts = {change.change - 1, change.change, change.change + 1};
      for (int64_t from = change.change - window; from <= change.change + window; from += 53) {
        starts.push_back(from);
      }
      for (int64_t from : starts) {
        auto first = std::upper_bound(cronie.begin(), cronie.end(), from);
        std::optional<WallTime> next = schedule->Next(FromUnixMs(from * 1000));
        ASSERT_NE(first, cronie.end());
        ASSERT_TRUE(next.has_value());
        EXPECT_EQ(FormatUtc(*next), FormatUtc(FromUnixMs(*first * 1000)))
            << change.zone << " '" << expr << "' from " << FormatUtc(FromUnixMs(from * 1000));
      }
    }
  }
}

}  // namespace
}  // namespace jobctl
