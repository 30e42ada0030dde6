// A small TOML lexer that only knows what decides where statements begin: strings (the four
// kinds), comments and bracket depth. A line starts a statement when the previous one left
// no string or array open; only then can it be a header, a comment or a key. Values are
// never interpreted: toml++ has already checked them.
#include "config/toml_lines.h"

namespace jobctl {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// What is still open at the end of a line.
struct LexState {
  enum class String { kNone, kMultiBasic, kMultiLiteral } string = String::kNone;
  int depth = 0;  // open [ and { in values
  bool open() const { return string != String::kNone || depth > 0; }
};

class LineScanner {
 public:
  LineScanner(std::string_view line, LexState* state) : s_(line), st_(state) {}

  // Scans from `i` to the end of the line (or a comment), updating the state.
  void Scan(size_t i) {
    i_ = i;
    while (i_ < s_.size()) {
      if (st_->string == LexState::String::kMultiBasic) {
        CloseMulti('"', /*escapes=*/true);
      } else if (st_->string == LexState::String::kMultiLiteral) {
        CloseMulti('\'', /*escapes=*/false);
      } else if (!Step()) {
        return;  // a comment: the rest of the line is its text
      }
    }
  }

 private:
  // One token outside strings; false at a comment.
  bool Step() {
    char c = s_[i_];
    if (c == '#') return false;
    if (c == '"' || c == '\'') {
      if (s_.substr(i_, 3) == std::string(3, c)) {
        st_->string = c == '"' ? LexState::String::kMultiBasic : LexState::String::kMultiLiteral;
        i_ += 3;
      } else {
        SkipSingleLineString(c);
      }
      return true;
    }
    if (c == '[' || c == '{') ++st_->depth;
    if ((c == ']' || c == '}') && st_->depth > 0) --st_->depth;
    ++i_;
    return true;
  }

  void SkipSingleLineString(char quote) {
    for (++i_; i_ < s_.size(); ++i_) {
      if (quote == '"' && s_[i_] == '\\') {
        ++i_;
      } else if (s_[i_] == quote) {
        ++i_;
        return;
      }
    }
  }

  // Inside a multi-line string: up to and past its closing delimiter, or to the line's end.
  // A run of 4 or 5 quotes closes the string with 1 or 2 of them as content.
  void CloseMulti(char quote, bool escapes) {
    while (i_ < s_.size()) {
      if (escapes && s_[i_] == '\\') {
        i_ += 2;
        continue;
      }
      if (s_[i_] != quote) {
        ++i_;
        continue;
      }
      size_t run = 0;
      while (i_ + run < s_.size() && s_[i_ + run] == quote) ++run;
      i_ += run;
      if (run >= 3) {
        st_->string = LexState::String::kNone;
        return;
      }
    }
  }

  std::string_view s_;
  LexState* st_;
  size_t i_ = 0;
};

// Parses "[a.b]" or "[[a . 'b']]" starting at the '['.
void ParseHeader(std::string_view s, size_t i, TomlLine* line) {
  line->kind = TomlLineKind::kHeader;
  ++i;
  if (i < s.size() && s[i] == '[') {
    line->array_header = true;
    ++i;
  }
  std::string part;
  while (i < s.size()) {
    char c = s[i];
    if (IsSpace(c)) {
      ++i;
    } else if (c == '.' || c == ']') {
      line->header.push_back(std::move(part));
      part.clear();
      if (c == ']') return;
      ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < s.size() && s[i] != c; ++i) {
        if (c == '"' && s[i] == '\\' && i + 1 < s.size()) ++i;
        part += s[i];
      }
      ++i;
    } else {
      part += c;
      ++i;
    }
  }
}

}  // namespace

std::vector<TomlLine> SplitTomlLines(std::string_view text) {
  std::vector<TomlLine> lines;
  LexState state;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view s = text.substr(pos, end - pos);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
    TomlLine line;
    line.begin = pos;
    line.end = end;
    LineScanner scanner(s, &state);
    if (state.open()) {
      line.kind = TomlLineKind::kContinuation;
      scanner.Scan(0);
    } else {
      size_t i = 0;
      while (i < s.size() && IsSpace(s[i])) ++i;
      if (i == s.size()) {
        line.kind = TomlLineKind::kBlank;
      } else if (s[i] == '#') {
        line.kind = TomlLineKind::kComment;
      } else if (s[i] == '[') {
        ParseHeader(s, i, &line);
      } else {
        line.kind = TomlLineKind::kKeyValue;
        scanner.Scan(i);
      }
    }
    lines.push_back(std::move(line));
    pos = end;
  }
  return lines;
}

}  // namespace jobctl
