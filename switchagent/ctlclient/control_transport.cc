#include "control_transport.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace switchagg::agent {

int64_t controlNowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

namespace {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// Waits until `fd` is ready for `events` or the deadline passes.
Status waitFd(int fd, short events, int64_t deadline_ms, const std::string& what) {
  for (;;) {
    int64_t left = deadline_ms - controlNowMs();
    if (left <= 0) return Status(Code::kTimeout, what + ": timed out");
    pollfd p{fd, events, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status(Code::kIoError, what + ": poll: " + strerror(errno));
    if (n > 0) return Status::Ok();
  }
}

// Non-blocking connect so a dead host cannot hold the caller (slurmd) longer
// than the deadline.
Status connectOne(int fd, const sockaddr* sa, socklen_t len, int64_t deadline_ms,
                  const std::string& what) {
  // EAGAIN (a Unix socket) means the agent's listen queue is full, under a
  // connection flood: the socket is not connecting at all (waiting for
  // POLLOUT would return at once and the first send fail with ENOTCONN), so
  // connect is tried again after a pause (1 ms doubling to 50 ms) until the
  // deadline. EINPROGRESS (TCP) is a connect under way: wait for it.
  for (int pause_ms = 1;; pause_ms = pause_ms < 25 ? pause_ms * 2 : 50) {
    if (connect(fd, sa, len) == 0) return Status::Ok();
    if (errno != EAGAIN) break;
    if (controlNowMs() + pause_ms >= deadline_ms)
      return Status(Code::kTimeout, what + ": timed out (its listen queue stayed full)");
    poll(nullptr, 0, pause_ms);
  }
  if (errno != EINPROGRESS) return Status(Code::kIoError, what + ": " + strerror(errno));
  SWITCHAGG_RETURN_IF_ERROR(waitFd(fd, POLLOUT, deadline_ms, what));
  int err = 0;
  socklen_t elen = sizeof err;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
  if (err != 0) return Status(Code::kIoError, what + ": " + strerror(err));
  return Status::Ok();
}

Status connectUnix(const ControlAddress& address, int64_t deadline_ms, Fd* out) {
  std::string what = "cannot connect to agent at " + address.toString();
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (address.path.size() >= sizeof sa.sun_path) {
    return Status(Code::kInvalidArgument, what + ": socket path too long");
  }
  memcpy(sa.sun_path, address.path.c_str(), address.path.size() + 1);
  out->reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (out->get() < 0) return Status(Code::kIoError, what + ": socket: " + strerror(errno));
  return connectOne(out->get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa, deadline_ms,
                    what);
}

Status connectTcp(const ControlAddress& address, int64_t deadline_ms, Fd* out) {
  std::string what = "cannot connect to agent at " + address.toString();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(address.port);
  int rc = getaddrinfo(address.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return Status(Code::kIoError, what + ": " + gai_strerror(rc));
  Status last(Code::kIoError, what + ": no address");
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    out->reset(socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (out->get() < 0) continue;
    last = connectOne(out->get(), ai->ai_addr, ai->ai_addrlen, deadline_ms, what);
    if (last.ok()) break;
  }
  freeaddrinfo(res);
  return last;
}

Status sendAll(int fd, const std::string& data, int64_t deadline_ms, const std::string& what) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SWITCHAGG_RETURN_IF_ERROR(waitFd(fd, POLLOUT, deadline_ms, what));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      // Cut while the agent had not read the request (see exchangeHttp).
      return Status(Code::kPeerFailed, what + ": the connection was closed before any answer (" +
                                           strerror(errno) + ")");
    } else {
      return Status(Code::kIoError, what + ": send: " + strerror(errno));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<HttpResponse> exchangeHttp(const ControlAddress& address, const std::string& request,
                                  int timeout_ms, size_t max_body) {
  int64_t deadline = controlNowMs() + (timeout_ms > 0 ? timeout_ms : 5000);
  Fd fd;
  Status st = address.is_unix ? connectUnix(address, deadline, &fd)
                              : connectTcp(address, deadline, &fd);
  if (!st.ok()) return st;
  std::string what = "agent at " + address.toString();
  SWITCHAGG_RETURN_IF_ERROR(sendAll(fd.get(), request, deadline, what));
  std::string data;
  char buf[16384];
  HttpResponse response;
  for (;;) {
    ssize_t n = recv(fd.get(), buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SWITCHAGG_RETURN_IF_ERROR(waitFd(fd.get(), POLLIN, deadline, what));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // Cut before a byte of the answer: the agent shed the connection while
    // it still read the request (a flood's newcomers displace the oldest
    // reader, docs/admin.md "Control plane under load") - kPeerFailed, which
    // the client retries once.
    if ((n < 0 && (errno == ECONNRESET || errno == EPIPE)) || (n == 0 && data.empty()))
      return Status(Code::kPeerFailed, what + ": the connection was closed before any answer" +
                                           (n < 0 ? std::string(" (") + strerror(errno) + ")" : ""));
    if (n < 0) return Status(Code::kIoError, what + ": recv: " + strerror(errno));
    bool eof = n == 0;
    data.append(buf, static_cast<size_t>(n));
    ParseResult r = parseHttpResponse(data, eof, max_body, &response);
    if (r.state == ParseState::kComplete) return response;
    if (r.state == ParseState::kError) return Status(Code::kProtocol, what + ": " + r.message);
  }
}

}  // namespace switchagg::agent
