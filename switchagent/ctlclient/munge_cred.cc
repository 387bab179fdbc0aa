#include "munge_cred.h"

#include <string_view>

#include "switchagg/common/sha256.h"

#if defined(SWITCHAGG_HAVE_MUNGE)
#include <munge.h>

#include <cstdlib>
#endif

namespace switchagg::agent {

namespace {

constexpr std::string_view kDigestField = " body-sha256=";

Status anotherRequest() {
  return Status(Code::kDenied, "munge credential was issued for another request");
}

}  // namespace

std::string mungeRequestPayload(const std::string& method, const std::string& target,
                                const std::string& body) {
  return method + " " + target + std::string(kDigestField) + sha256Hex(body);
}

Status checkMungeRequestPayload(const std::string& payload, const std::string& method,
                                const std::string& target, const std::string& body) {
  const std::string line = method + " " + target;
  std::string_view rest(payload);
  if (rest.substr(0, line.size()) != line) return anotherRequest();
  rest.remove_prefix(line.size());
  if (rest.empty()) {
    if (body.empty()) return Status::Ok();
    return Status(Code::kDenied,
                  "munge credential signs the request line only, not the body (a client older "
                  "than this agent?): upgrade the client");
  }
  if (rest.substr(0, kDigestField.size()) != kDigestField) return anotherRequest();
  rest.remove_prefix(kDigestField.size());
  if (rest != sha256Hex(body)) {
    return Status(Code::kDenied,
                  "munge credential does not match the request body (it was signed for another "
                  "body: was the request altered on the way?)");
  }
  return Status::Ok();
}

#if defined(SWITCHAGG_HAVE_MUNGE)

namespace {

// A munge context bound to `socket_path` (or the default); freed on scope exit.
class MungeContext {
 public:
  explicit MungeContext(const std::string& socket_path) : ctx_(munge_ctx_create()) {
    if (ctx_ != nullptr && !socket_path.empty()) {
      ok_ = munge_ctx_set(ctx_, MUNGE_OPT_SOCKET, socket_path.c_str()) == EMUNGE_SUCCESS;
    }
  }
  ~MungeContext() {
    if (ctx_ != nullptr) munge_ctx_destroy(ctx_);
  }
  MungeContext(const MungeContext&) = delete;
  MungeContext& operator=(const MungeContext&) = delete;
  bool ok() const { return ctx_ != nullptr && ok_; }
  munge_ctx_t get() const { return ctx_; }

 private:
  munge_ctx_t ctx_;
  bool ok_ = true;
};

}  // namespace

bool mungeBuiltIn() { return true; }

Result<std::string> mungeEncode(const std::string& payload, const std::string& socket_path) {
  MungeContext ctx(socket_path);
  if (!ctx.ok()) return Status(Code::kInternal, "munge: cannot create a context");
  char* cred = nullptr;
  munge_err_t err = munge_encode(&cred, ctx.get(), payload.data(), static_cast<int>(payload.size()));
  if (err != EMUNGE_SUCCESS) {
    return Status(Code::kUnsupported, std::string("munge_encode: ") + munge_ctx_strerror(ctx.get()));
  }
  std::string out(cred);
  free(cred);  // NOLINT: libmunge allocates with malloc
  return out;
}

Result<MungeIdentity> mungeDecode(const std::string& credential, const std::string& socket_path) {
  MungeContext ctx(socket_path);
  if (!ctx.ok()) return Status(Code::kInternal, "munge: cannot create a context");
  void* buf = nullptr;
  int len = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  munge_err_t err = munge_decode(credential.c_str(), ctx.get(), &buf, &len, &uid, &gid);
  MungeIdentity id;
  if (buf != nullptr) {
    id.payload.assign(static_cast<const char*>(buf), static_cast<size_t>(len));
    free(buf);  // NOLINT: libmunge allocates with malloc
  }
  if (err != EMUNGE_SUCCESS) {
    Code code = (err == EMUNGE_SOCKET || err == EMUNGE_SNAFU) ? Code::kUnsupported : Code::kDenied;
    return Status(code, std::string("munge: ") + munge_strerror(err));
  }
  id.uid = uid;
  id.gid = gid;
  return id;
}

#else

bool mungeBuiltIn() { return false; }

Result<std::string> mungeEncode(const std::string&, const std::string&) {
  return Status(Code::kUnsupported, "built without libmunge");
}

Result<MungeIdentity> mungeDecode(const std::string&, const std::string&) {
  return Status(Code::kUnsupported, "built without libmunge");
}

#endif

}  // namespace switchagg::agent
