// Reading a descriptor to its end, and writing all of a buffer to one: the loops every caller
// would otherwise write (EINTR, short reads and writes). Any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace jobctl {

// Appends what `fd` holds to `out` until end of file, or until `out` holds more than
// `max_bytes` (the rest is left unread). 0, or the errno of the read that failed.
int ReadToEnd(int fd, std::string* out, size_t max_bytes);
// Writes all of `data` to `fd`. 0, or the errno of the write that failed (EIO for a write
// that wrote nothing).
int WriteToEnd(int fd, std::string_view data);

}  // namespace jobctl
