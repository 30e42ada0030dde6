// TerminalText makes text that came from elsewhere (a job's output, an agent's name or
// labels, a run's note) safe to print on a terminal, where an escape sequence in it would
// otherwise be obeyed: clear the screen, set the window title, write the clipboard (OSC 52),
// redefine keys. Every control character and escape sequence is shown instead, visibly:
//
//   C0 controls and DEL      caret notation: ESC as ^[, BEL as ^G, CR as ^M, DEL as ^?
//                            (newline and tab pass; CR passes in a CRLF pair)
//   C1 controls (U+0080-U+009F, as UTF-8) and bidirectional overrides (U+061C, U+200E,
//   U+200F, U+202A-U+202E, U+2066-U+2069)     as \u and 4 hex digits: \u009b, \u202e
//   bytes that are not UTF-8 \x and 2 hex digits: \xff
//
// So "\x1b]52;c;aGk=\x07" prints as "^[]52;c;aGk=^G": its text stays readable, nothing of
// it acts. Plain SGR colour sequences ("ESC [ 1;31 m") may instead be kept or dropped
// (SgrPolicy): only the ones that set colours and plain attributes, never blink or conceal.
//
// TerminalSanitizer works on a stream cut into arbitrary pieces: an escape sequence, a UTF-8
// character or a CR cut at the end of a piece is held (at most kMaxHeld bytes) until the
// next piece or Finish(). Pure functions of their input; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace jobctl {

enum class SgrPolicy {
  kShow,  // colour sequences are shown like any other: ^[[31m
  kDrop,  // safe colour sequences are removed; anything else is shown
  kKeep,  // safe colour sequences pass; anything else is shown
};

class TerminalSanitizer {
 public:
  static constexpr size_t kMaxHeld = 64;  // longest SGR sequence kept or dropped whole

  explicit TerminalSanitizer(SgrPolicy sgr = SgrPolicy::kShow) : sgr_(sgr) {}
  // Appends the safe rendering of `data` to *out.
  void Feed(std::string_view data, std::string* out);
  // Renders what is held (shown visibly, it never completed) and, when colours were passed,
  // a reset ("ESC [ 0 m") so that nothing bleeds into what the terminal prints next.
  void Finish(std::string* out);

 private:
  // Renders buf from its start; returns how many bytes were consumed (the rest is held).
  size_t Render(std::string_view buf, bool final, std::string* out);
  // At buf[0] == ESC: the length of a complete safe SGR sequence, 0 when it is not one, or
  // npos when more bytes are needed to tell.
  static size_t SafeSgrLength(std::string_view buf);

  SgrPolicy sgr_;
  std::string held_;
  bool coloured_ = false;  // a kept SGR sequence went out: reset at Finish
};

// The whole text at once (for table cells, names, messages).
std::string SanitizeForTerminal(std::string_view text, SgrPolicy sgr = SgrPolicy::kShow);

// For JSON already serialized (UTF-8, control characters below 0x20 escaped by the
// serializer): rewrites DEL, C1 controls and bidirectional overrides, which a serializer
// leaves raw, as \u escapes. Those occur only inside strings, where \u escapes mean the same
// character, so the JSON still parses to the same value.
std::string EscapeJsonForTerminal(std::string_view json);

}  // namespace jobctl
