// Writing a file the way an editor should: the new text goes to a temporary file next to
// the target, which is flushed to disk and renamed over it, so a reader (or a crash) sees
// either the old file or the new one, never half of each. Used by add, rm, edit and
// import-crontab --append. Single-threaded CLI code.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace jobctl::cli {

// Replaces `path` with `text`. An existing file keeps its permission bits (and its owner
// and group when the process may set them); a symlink keeps pointing at the file, which is
// the one replaced. A new file gets 0666 less the umask. kIo with the reason on failure.
Status WriteFileAtomically(const std::string& path, std::string_view text);

}  // namespace jobctl::cli
