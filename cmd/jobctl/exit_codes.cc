#include "exit_codes.h"

namespace jobctl::cli {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk: return kExitOk;
    case Status::Code::kInvalidArgument: return kExitDataErr;
    case Status::Code::kNotFound: return kExitDataErr;
    case Status::Code::kConflict: return kExitTempFail;
    case Status::Code::kUnavailable: return kExitUnavailable;
    case Status::Code::kUnauthenticated: return kExitNoPerm;
    case Status::Code::kPermissionDenied: return kExitNoPerm;
    case Status::Code::kResourceExhausted: return kExitTempFail;
    case Status::Code::kIo: return kExitNoInput;
    case Status::Code::kCorrupt: return kExitDataErr;
    case Status::Code::kInternal: return kExitSoftware;
  }
  return kExitSoftware;
}

}  // namespace jobctl::cli
