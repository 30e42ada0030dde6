// TomlLines says what each line of a TOML text is (blank, comment, table header, the start
// of a key = value, or the continuation of a value that spans lines), for edits that must
// leave every other byte of a job file alone (job_file_edit). It follows strings, multi-line
// strings and arrays across lines, so a "[[job]]" inside a multi-line string or an array is
// not taken for a header. Meant for text toml++ has already accepted: on invalid TOML it
// still returns lines but may classify them wrongly. Pure function, any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl {

enum class TomlLineKind {
  kBlank,         // only spaces, tabs and the line ending
  kComment,       // a comment and nothing else
  kHeader,        // [table] or [[array.of.tables]]
  kKeyValue,      // the first line of a key = value
  kContinuation,  // inside a multi-line string or array that began on an earlier line
};

struct TomlLine {
  size_t begin = 0;  // offset of the line's first byte
  size_t end = 0;    // offset just past its '\n' (the text's end for an unterminated last line)
  TomlLineKind kind = TomlLineKind::kBlank;
  std::vector<std::string> header;  // kHeader: the key path, quotes removed ("job", "retry")
  bool array_header = false;        // kHeader: [[...]]
};

// Lines end at '\n'; a '\r' before it counts as part of the line ending.
std::vector<TomlLine> SplitTomlLines(std::string_view text);

}  // namespace jobctl
