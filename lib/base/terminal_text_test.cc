#include "base/terminal_text.h"

#include <gtest/gtest.h>

#include <string>

namespace jobctl {
namespace {

std::string Show(std::string_view s) { return SanitizeForTerminal(s); }

// Pieces fed one after the other into one sanitizer.
std::string Stream(std::initializer_list<std::string_view> pieces, SgrPolicy sgr) {
  TerminalSanitizer t(sgr);
  std::string out;
  for (std::string_view p : pieces) t.Feed(p, &out);
  t.Finish(&out);
  return out;
}

bool HasEscape(const std::string& s) {
  for (unsigned char c : s) {
    if (c == 0x1b || c == 0x07 || c == 0x9b || c == 0x9d || c == 0x90) return true;
  }
  return false;
}

TEST(TerminalTextTest, PlainTextNewlinesTabsAndUtf8PassUnchanged) {
  std::string text = "backup ok\tin 3s\nZ\xc3\xbcrich \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\n";
  EXPECT_EQ(Show(text), text);
  EXPECT_EQ(Show("line\r\n"), "line\r\n");
}

TEST(TerminalTextTest, CsiSequencesAreShownInCaretNotation) {
  EXPECT_EQ(Show("\x1b[2J\x1b[H"), "^[[2J^[[H");
  EXPECT_EQ(Show("\x1b[31mred\x1b[0m"), "^[[31mred^[[0m");
}

TEST(TerminalTextTest, OscWithBelOrStTerminatorIsShown) {
  // Window title and an OSC 52 clipboard write, ended by BEL and by ST (ESC \).
  EXPECT_EQ(Show("\x1b]0;pwned\x07"), "^[]0;pwned^G");
  EXPECT_EQ(Show("\x1b]52;c;cm0gLXJmIH4=\x1b\\"), "^[]52;c;cm0gLXJmIH4=^[\\");
}

TEST(TerminalTextTest, DcsAndOtherC0ControlsAreShown) {
  EXPECT_EQ(Show("\x1bP+q544e\x1b\\"), "^[P+q544e^[\\");
  EXPECT_EQ(Show(std::string("a\bb\x7f\x00z", 6)), "a^Hb^?^@z");
  EXPECT_EQ(Show("over\rwrite"), "over^Mwrite");
}

TEST(TerminalTextTest, LoneEscAtTheEndIsShown) {
  EXPECT_EQ(Show("tail\x1b"), "tail^[");
  EXPECT_EQ(Stream({"tail\x1b"}, SgrPolicy::kKeep), "tail^[");
  EXPECT_EQ(Stream({"x\x1b["}, SgrPolicy::kKeep), "x^[[");
}

TEST(TerminalTextTest, C1ControlsInUtf8AreShownAsCodePoints) {
  // U+009B is CSI and U+009D is OSC for a terminal that reads C1 controls in UTF-8.
  EXPECT_EQ(Show("a\xc2\x9b"
                 "2Jb"),
            "a\\u009b2Jb");
  EXPECT_EQ(Show("\xc2\x9d"
                 "0;t\xc2\x9c"),
            "\\u009d0;t\\u009c");
  EXPECT_EQ(Show("\xc2\x85"), "\\u0085");
}

TEST(TerminalTextTest, BidiOverridesAreShown) {
  EXPECT_EQ(Show("a\xe2\x80\xae"
                 "b"),
            "a\\u202eb");
  EXPECT_EQ(Show("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
}

TEST(TerminalTextTest, InvalidUtf8IsShownAsHexBytes) {
  EXPECT_EQ(Show("\x9b"
                 "2J"),
            "\\x9b2J");  // a raw 8-bit CSI
  EXPECT_EQ(Show("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(Show("\xc0\xaf"), "\\xc0\\xaf");                    // overlong "/"
  EXPECT_EQ(Show("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(Show("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(Show("ok\xe2\x82"), "ok\\xe2\\x82");                // cut at the end
}

TEST(TerminalTextTest, SafeSgrIsKeptOrDroppedOnRequestAndColourIsResetAtTheEnd) {
  EXPECT_EQ(Stream({"\x1b[1;31mFAIL\x1b[0m ok"}, SgrPolicy::kKeep),
            "\x1b[1;31mFAIL\x1b[0m ok\x1b[0m");
  EXPECT_EQ(Stream({"\x1b[38;5;208mo\x1b[48;2;1;2;3mx"}, SgrPolicy::kKeep),
            "\x1b[38;5;208mo\x1b[48;2;1;2;3mx\x1b[0m");
  EXPECT_EQ(Stream({"\x1b[1;31mFAIL\x1b[0m ok"}, SgrPolicy::kDrop), "FAIL ok");
  EXPECT_EQ(Stream({"plain"}, SgrPolicy::kKeep), "plain");
}

TEST(TerminalTextTest, UnsafeSgrAndOtherCsiAreShownEvenWhenColoursAreKept) {
  EXPECT_EQ(Stream({"\x1b[8mhidden"}, SgrPolicy::kKeep), "^[[8mhidden");  // conceal
  EXPECT_EQ(Stream({"\x1b[5mblink"}, SgrPolicy::kKeep), "^[[5mblink");
  EXPECT_EQ(Stream({"\x1b[2J"}, SgrPolicy::kKeep), "^[[2J");
  EXPECT_EQ(Stream({"\x1b[38;5;999m"}, SgrPolicy::kKeep), "^[[38;5;999m");
  EXPECT_EQ(Stream({"\x1b[?1049h"}, SgrPolicy::kKeep), "^[[?1049h");
  std::string long_sgr = "\x1b[" + std::string(100, '1') + "m";
  EXPECT_FALSE(HasEscape(Stream({long_sgr}, SgrPolicy::kKeep)));
}

TEST(TerminalTextTest, SequencesCutAcrossPiecesAreJudgedWhole) {
  EXPECT_EQ(Stream({"a\x1b[3", "1mred\x1b", "[0m"}, SgrPolicy::kKeep),
            "a\x1b[31mred\x1b[0m\x1b[0m");
  EXPECT_EQ(Stream({"a\x1b", "]0;t\x07"}, SgrPolicy::kKeep), "a^[]0;t^G");
  EXPECT_EQ(Stream({"Z\xc3", "\xbcrich"}, SgrPolicy::kShow), "Z\xc3\xbcrich");
  EXPECT_EQ(Stream({"x\xc2",
                    "\x9b"
                    "2J"},
                   SgrPolicy::kShow),
            "x\\u009b2J");
  EXPECT_EQ(Stream({"line\r", "\nnext\r", "x"}, SgrPolicy::kShow), "line\r\nnext^Mx");
}

TEST(TerminalTextTest, JsonKeepsItsValueAndLosesRawControls) {
  EXPECT_EQ(EscapeJsonForTerminal("{\n  \"name\": \"a\xc2\x9b"
                                  "b\xe2\x80\xae\x7f\"\n}"),
            "{\n  \"name\": \"a\\u009bb\\u202e\\u007f\"\n}");
  EXPECT_EQ(EscapeJsonForTerminal("[\"Z\xc3\xbcrich\"]"), "[\"Z\xc3\xbcrich\"]");
}

}  // namespace
}  // namespace jobctl
