#include "base/terminal_text.h"

#include <cstdint>
#include <vector>

namespace jobctl {
namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr size_t kNeedMore = std::string_view::npos;

// The length of the UTF-8 character at s[i] (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF) with its code point in *cp; 0 when the byte starts no valid
// character; kNeedMore when s ends inside one that is valid so far.
size_t Utf8Length(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&s](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char lead = b(i);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    len = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    len = 3;
    if (lead == 0xe0) lo = 0xa0;
    if (lead == 0xed) hi = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    len = 4;
    if (lead == 0xf0) lo = 0x90;
    if (lead == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  uint32_t v = lead & (0x7f >> len);
  for (size_t k = 1; k < len; ++k) {
    if (i + k >= s.size()) return kNeedMore;
    unsigned char c = b(i + k);
    if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xbf)) return 0;
    v = (v << 6) | (c & 0x3f);
  }
  *cp = v;
  return len;
}

bool IsShownAsCodePoint(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

void AppendCodePoint(uint32_t cp, std::string* out) {
  out->append("\\u");
  for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kHex[(cp >> shift) & 0xf]);
}

// Whether the parameters of an SGR sequence (between "ESC [" and "m") only set colours and
// plain attributes. Blink (5, 6) and conceal (8) are not plain; neither is anything unknown.
bool SafeSgrParams(std::string_view params) {
  std::vector<int> p;
  int v = 0;
  size_t digits = 0;
  for (size_t i = 0; i <= params.size(); ++i) {
    if (i == params.size() || params[i] == ';') {
      p.push_back(v);
      v = 0;
      digits = 0;
      continue;
    }
    char c = params[i];
    if (c < '0' || c > '9' || ++digits > 3) return false;
    v = v * 10 + (c - '0');
  }
  for (size_t i = 0; i < p.size(); ++i) {
    int x = p[i];
    if (x == 38 || x == 48 || x == 58) {  // extended colour: 5;N or 2;R;G;B
      if (i + 1 < p.size() && p[i + 1] == 5 && i + 2 < p.size() && p[i + 2] <= 255) {
        i += 2;
        continue;
      }
      if (i + 1 < p.size() && p[i + 1] == 2 && i + 4 < p.size() && p[i + 2] <= 255 &&
          p[i + 3] <= 255 && p[i + 4] <= 255) {
        i += 4;
        continue;
      }
      return false;
    }
    bool plain = (x >= 0 && x <= 4) || x == 7 || x == 9 || (x >= 21 && x <= 24) || x == 27 ||
                 x == 29 || (x >= 30 && x <= 37) || x == 39 || (x >= 40 && x <= 47) || x == 49 ||
                 x == 59 || (x >= 90 && x <= 97) || (x >= 100 && x <= 107);
    if (!plain) return false;
  }
  return true;
}

}  // namespace

size_t TerminalSanitizer::SafeSgrLength(std::string_view buf) {
  if (buf.size() < 2) return kNeedMore;
  if (buf[1] != '[') return 0;
  for (size_t i = 2; i < buf.size(); ++i) {
    char c = buf[i];
    if (c == 'm') return SafeSgrParams(buf.substr(2, i - 2)) ? i + 1 : 0;
    if ((c < '0' || c > '9') && c != ';') return 0;
    if (i + 1 >= kMaxHeld) return 0;
  }
  return buf.size() >= kMaxHeld ? 0 : kNeedMore;
}

size_t TerminalSanitizer::Render(std::string_view buf, bool final, std::string* out) {
  size_t i = 0;
  while (i < buf.size()) {
    unsigned char c = static_cast<unsigned char>(buf[i]);
    if (c >= 0x20 && c < 0x7f) {
      size_t start = i;
      while (i < buf.size() && static_cast<unsigned char>(buf[i]) >= 0x20 &&
             static_cast<unsigned char>(buf[i]) < 0x7f) {
        ++i;
      }
      out->append(buf.substr(start, i - start));
      continue;
    }
    if (c == '\n' || c == '\t') {
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (c == '\r') {
      if (i + 1 == buf.size() && !final) return i;  // CRLF cut in two: wait for the rest
      if (i + 1 < buf.size() && buf[i + 1] == '\n') {
        out->append("\r\n");
        i += 2;
      } else {
        out->append("^M");
        ++i;
      }
      continue;
    }
    if (c == 0x1b && sgr_ != SgrPolicy::kShow) {
      size_t n = SafeSgrLength(buf.substr(i));
      if (n == kNeedMore && !final) return i;
      if (n != kNeedMore && n != 0) {
        if (sgr_ == SgrPolicy::kKeep) {
          out->append(buf.substr(i, n));
          coloured_ = true;
        }
        i += n;
        continue;
      }
    }
    if (c < 0x20 || c == 0x7f) {
      out->push_back('^');
      out->push_back(c == 0x7f ? '?' : static_cast<char>(c + 0x40));
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t len = Utf8Length(buf, i, &cp);
    if (len == kNeedMore && !final) return i;
    if (len == 0 || len == kNeedMore) {
      out->append("\\x");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 0xf]);
      ++i;
      continue;
    }
    if (IsShownAsCodePoint(cp)) {
      AppendCodePoint(cp, out);
    } else {
      out->append(buf.substr(i, len));
    }
    i += len;
  }
  return i;
}

void TerminalSanitizer::Feed(std::string_view data, std::string* out) {
  if (held_.empty()) {
    size_t used = Render(data, false, out);
    held_.assign(data.substr(used));
    return;
  }
  held_.append(data);
  std::string buf = std::move(held_);
  size_t used = Render(buf, false, out);
  held_.assign(buf, used);
}

void TerminalSanitizer::Finish(std::string* out) {
  std::string buf = std::move(held_);
  held_.clear();
  Render(buf, true, out);
  if (coloured_) out->append("\x1b[0m");
  coloured_ = false;
}

std::string SanitizeForTerminal(std::string_view text, SgrPolicy sgr) {
  std::string out;
  out.reserve(text.size());
  TerminalSanitizer s(sgr);
  s.Feed(text, &out);
  s.Finish(&out);
  return out;
}

std::string EscapeJsonForTerminal(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size();) {
    unsigned char c = static_cast<unsigned char>(json[i]);
    if (c < 0x80) {
      if (c == 0x7f || (c < 0x20 && c != '\n' && c != ' ')) {
        AppendCodePoint(c, &out);
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    size_t len = Utf8Length(json, i, &cp);
    if (len == 0 || len == kNeedMore) {
      AppendCodePoint(0xfffd, &out);  // not UTF-8: never from a serializer, shown as U+FFFD
      ++i;
      continue;
    }
    if (IsShownAsCodePoint(cp)) {
      AppendCodePoint(cp, &out);
    } else {
      out.append(json.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace jobctl
