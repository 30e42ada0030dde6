// libFuzzer target: any bytes through the terminal sanitizer, whole and cut in two at a
// point the input chooses, under every SGR policy. What comes out must be valid UTF-8 with
// no control character but newline, tab and CR before newline, no C1 control or
// bidirectional override, and no ESC except a kept colour sequence; cutting the input must
// not change the result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/terminal_text.h"

namespace {

using jobctl::SgrPolicy;

void Check(bool ok) {
  if (!ok) std::abort();
}

// Whether out[i] starts "ESC [ digits/; m".
size_t SgrAt(const std::string& out, size_t i) {
  if (i + 2 >= out.size() || out[i + 1] != '[') return 0;
  for (size_t k = i + 2; k < out.size(); ++k) {
    if (out[k] == 'm') return k + 1 - i;
    if ((out[k] < '0' || out[k] > '9') && out[k] != ';') return 0;
  }
  return 0;
}

void CheckSafe(const std::string& out, SgrPolicy sgr) {
  for (size_t i = 0; i < out.size();) {
    unsigned char c = static_cast<unsigned char>(out[i]);
    if (c == 0x1b) {
      size_t n = sgr == SgrPolicy::kKeep ? SgrAt(out, i) : 0;
      Check(n > 0);
      i += n;
      continue;
    }
    if (c < 0x80) {
      Check(c >= 0x20 || c == '\n' || c == '\t' ||
            (c == '\r' && i + 1 < out.size() && out[i + 1] == '\n'));
      Check(c != 0x7f);
      ++i;
      continue;
    }
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
    Check(c >= 0xc2 && c <= 0xf4 && i + len <= out.size());
    uint32_t cp = c & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) {
      unsigned char d = static_cast<unsigned char>(out[i + k]);
      Check((d & 0xc0) == 0x80);
      cp = (cp << 6) | (d & 0x3f);
    }
    Check(!(cp >= 0x80 && cp <= 0x9f) && !(cp >= 0x202a && cp <= 0x202e) &&
          !(cp >= 0x2066 && cp <= 0x2069) && cp != 0x200e && cp != 0x200f && cp != 0x061c);
    Check(!(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff &&
          cp >= (len == 2   ? 0x80u
                 : len == 3 ? 0x800u
                            : 0x10000u));
    i += len;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  for (SgrPolicy sgr : {SgrPolicy::kShow, SgrPolicy::kDrop, SgrPolicy::kKeep}) {
    std::string whole = jobctl::SanitizeForTerminal(text, sgr);
    CheckSafe(whole, sgr);
    jobctl::TerminalSanitizer t(sgr);
    std::string pieces;
    t.Feed(text.substr(0, cut), &pieces);
    t.Feed(text.substr(cut), &pieces);
    t.Finish(&pieces);
    Check(pieces == whole);
  }
  std::string json = jobctl::EscapeJsonForTerminal(text);
  // Serialized JSON has no raw controls; whatever the input, none come out.
  for (unsigned char c : json) Check(c != 0x7f && (c >= 0x20 || c == '\n'));
  CheckSafe(json, SgrPolicy::kShow);
  return 0;
}
