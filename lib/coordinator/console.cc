#include "coordinator/console.h"

#include <string>

namespace jobctl::coordinator {

std::optional<http::Response> ConsoleResponse(std::string_view name) {
  if (name.empty()) name = "index.html";
  for (size_t i = 0; i < kConsoleFileCount; ++i) {
    const ConsoleFile& f = kConsoleFiles[i];
    if (name != f.name) continue;
    http::Response r;
    r.status = 200;
    r.content_type = f.type;
    r.body.assign(reinterpret_cast<const char*>(f.data), f.size);
    r.headers = {{"Content-Security-Policy", std::string(kConsolePolicy)},
                 {"X-Content-Type-Options", "nosniff"},
                 {"X-Frame-Options", "DENY"},
                 {"Referrer-Policy", "no-referrer"},
                 {"Cross-Origin-Opener-Policy", "same-origin"},
                 {"Cache-Control", "no-cache"}};
    return r;
  }
  return std::nullopt;
}

}  // namespace jobctl::coordinator
