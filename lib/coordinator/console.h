// The web console at /ui/: a page and its script and style, built into the binary (from
// console/ by cmake/embed_console.cmake), served by the coordinator's own port. The files hold
// no secret and are served without a token; everything the page shows it reads through the
// JSON API with the token the viewer gives it, under the same checks as the CLI.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "http/server.h"

namespace jobctl::coordinator {

struct ConsoleFile {
  const char* name;  // "index.html", "app.js", ...
  const char* type;  // its Content-Type
  const unsigned char* data;
  size_t size;
};
extern const ConsoleFile kConsoleFiles[];
extern const size_t kConsoleFileCount;

// The policy every console response carries: scripts, styles and requests from this origin
// only; no inline script, no frames, no plugins, no forms posted elsewhere.
inline constexpr std::string_view kConsolePolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// GET /ui/NAME ("" or "index.html": the page): the file with its headers, or nullopt when
// the console has no such file.
std::optional<http::Response> ConsoleResponse(std::string_view name);

}  // namespace jobctl::coordinator
