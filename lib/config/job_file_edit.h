// Editing jobs.toml in place, for `jobctl add`, `rm` and `import-crontab --append`: the
// file is a sysadmin's, kept in git, so every byte outside the job or flow being added or
// removed stays as it was (comments, blank lines, key order, quoting, CRLF line endings).
// Edits work on the text; toml++ is used only to check that the file is TOML and to find
// where each job's or flow's name is. The result is not validated as a job file: callers run
// ParseJobFile on it before writing. Pure functions, any thread.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"
#include "model/job.h"

namespace jobctl {

// `job` as a [[job]] table, one key per line ending in '\n': name, schedule, dialect and
// timezone when set, command or shell, then only the keys whose value differs from a
// default-constructed Job (what a user gave on the command line).
std::string RenderJob(const Job& job);

// `s` as a TOML string: a literal string ('...') when that needs no escapes and a basic
// string would ("a \"b\"" reads worse than 'a "b"'), else a basic string with escapes.
std::string TomlString(std::string_view s);

// Appends `block` (lines ending in '\n') to `text` after one blank line, ending the last
// line of `text` first if it is unterminated. An empty text gets the block alone. The block
// takes the text's line ending (CRLF when its first line ends in CRLF).
std::string AppendBlock(std::string_view text, std::string_view block);

// AppendBlock(text, RenderJob(job)). kConflict when a job of that name exists;
// kInvalidArgument when `text` is not TOML ("line 3, column 7: ...").
Result<std::string> AddJob(std::string_view text, const Job& job);

// Removes the job's block: from its [[job]] header, with the comment lines directly above
// it (no blank line between), to the next table header that is not one of its own
// sub-tables ([job.retry]), less the comment lines directly above that header. A job at
// the end of the file also takes the blank lines before it. kNotFound when there is no
// such job; kInvalidArgument when `text` is not TOML or the job is not a [[job]] table.
Result<std::string> RemoveJob(std::string_view text, std::string_view name);

// The same for a [[flow]]: its own sub-tables are [[flow.step]] and those below it
// ([flow.step.retry]).
Result<std::string> RemoveFlow(std::string_view text, std::string_view name);

}  // namespace jobctl
