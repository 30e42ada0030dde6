// The exit codes of jobctl, after sysexits.h, so that scripts and CI can tell a failed job
// from a broken setup. Every command maps a Status to its exit code here and nowhere else.
#pragma once

#include "base/status.h"

namespace jobctl::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;         // the job or run failed (trigger --wait)
inline constexpr int kExitUsage = 64;         // EX_USAGE: bad command line
inline constexpr int kExitDataErr = 65;       // EX_DATAERR: bad job file or expression
inline constexpr int kExitNoInput = 66;       // EX_NOINPUT: a file could not be read
inline constexpr int kExitUnavailable = 69;   // EX_UNAVAILABLE: coordinator unreachable
inline constexpr int kExitSoftware = 70;      // EX_SOFTWARE: a bug
inline constexpr int kExitCantCreate = 73;    // EX_CANTCREAT: an output file could not be written
inline constexpr int kExitTempFail = 75;      // EX_TEMPFAIL: try again later
inline constexpr int kExitNoPerm = 77;        // EX_NOPERM: not authorized
inline constexpr int kExitConfig = 78;        // EX_CONFIG: bad configuration
inline constexpr int kExitInterrupted = 130;  // Ctrl-C (128 + SIGINT), as shells report it

int ExitCodeFor(const Status& status);

}  // namespace jobctl::cli
