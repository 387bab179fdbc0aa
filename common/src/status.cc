#include "switchagg/common/status.h"

namespace switchagg {

const char* codeName(Code c) {
  switch (c) {
    case Code::kOk: return "Ok";
    case Code::kInProgress: return "InProgress";
    case Code::kTimeout: return "Timeout";
    case Code::kPeerFailed: return "PeerFailed";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kUnsupported: return "Unsupported";
    case Code::kNoResource: return "NoResource";
    case Code::kDenied: return "Denied";
    case Code::kProtocol: return "Protocol";
    case Code::kAborted: return "Aborted";
    case Code::kIoError: return "IoError";
    case Code::kInternal: return "Internal";
    case Code::kBusy: return "Busy";
  }
  return "Unknown";
}

std::string Status::toString() const {
  if (ok()) return "Ok";
  std::string s = codeName(code_);
  if (!message_.empty()) {
    s += ": ";
    s += message_;
  }
  return s;
}

}  // namespace switchagg
