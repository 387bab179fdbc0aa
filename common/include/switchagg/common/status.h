// Status: the error value every switchagg layer returns on hot paths.
// Foreign codes (ucs_status_t, MPI, SPANK, errno) are translated into it in
// one place per boundary; nothing in a library aborts.
#pragma once

#include <string>
#include <utility>

namespace switchagg {

enum class Code {
  kOk = 0,
  kInProgress,       // not finished yet; poll or wait again
  kTimeout,          // a bounded wait ran out
  kPeerFailed,       // the remote side died or the endpoint broke
  kInvalidArgument,  // caller's input is wrong (names the argument)
  kUnsupported,      // valid, but this path cannot serve it (decline)
  kNoResource,       // quota, slots or memory exhausted
  kDenied,           // authentication or policy refused
  kProtocol,         // malformed or unexpected message
  kAborted,          // the operation's group/lease was torn down
  kIoError,          // socket/file I/O failed
  kInternal,         // a bug: an invariant broke
  kBusy,             // shared resource in use right now; nothing done, retry later
};

const char* codeName(Code c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "PeerFailed: endpoint to 10.0.0.2 closed" — for logs and user messages.
  std::string toString() const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : status_(std::move(status)) {}  // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { return value_; }
  const T& value() const { return value_; }
  T& operator*() { return value_; }
  T* operator->() { return &value_; }

 private:
  Status status_;
  T value_{};
};

}  // namespace switchagg

#define SWITCHAGG_RETURN_IF_ERROR(expr)       \
  do {                                        \
    ::switchagg::Status _st = (expr);         \
    if (!_st.ok()) return _st;                \
  } while (0)
