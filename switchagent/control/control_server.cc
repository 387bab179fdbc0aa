#include "control_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "munge_cred.h"
#include "switchagg/common/log.h"

namespace switchagg::agent {

namespace {

constexpr const char* kPart = "agent";

Status sysError(const std::string& what) {
  return Status(Code::kIoError, what + ": " + strerror(errno));
}

// mkdir -p for the socket's directory (e.g. /run/switchagg after a reboot).
Status makeParentDirs(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    std::string dir = path.substr(0, pos);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return sysError("control.unix_socket: cannot create " + dir);
    }
  }
  return Status::Ok();
}

// A leftover socket file from a crashed agent is removed; a live agent on
// the same path is an error rather than something to steal from.
Status clearStaleSocket(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return Status::Ok();
  if (!S_ISSOCK(st.st_mode)) {
    return Status(Code::kInvalidArgument, "control.unix_socket: " + path + " exists and is not a socket");
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  bool live = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  close(fd);
  if (live) {
    return Status(Code::kInvalidArgument, "control.unix_socket: another agent listens on " + path);
  }
  unlink(path.c_str());
  return Status::Ok();
}

int64_t nowMs() { return steadyNowMs(); }

bool sendAll(int fd, const std::string& data, int64_t deadline) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int64_t left = deadline - nowMs();
      if (left <= 0) return false;
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

// Reads one request within the deadline. Returns the parse result; a peer
// that closes early or a timeout yields kError with status 0 / 408.
ParseResult readRequest(int fd, const HttpLimits& limits, int64_t deadline, HttpRequest* out) {
  std::string data;
  char buf[8192];
  for (;;) {
    int64_t left = deadline - nowMs();
    if (left <= 0) return ParseResult{ParseState::kError, 408, "request not complete in time", 0};
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // timeout: the deadline check above answers 408
    ssize_t got = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (got <= 0) return ParseResult{ParseState::kError, 0, "peer closed", 0};
    data.append(buf, static_cast<size_t>(got));
    ParseResult r = parseHttpRequest(data, limits, out);
    if (r.state != ParseState::kNeedMore) return r;
  }
}

// Who is at the other end: the numeric source address on TCP, the uid on
// the Unix socket (root is not held to a per-peer share).
std::string peerOf(int fd, Listener listener, bool* unlimited) {
  *unlimited = false;
  if (listener == Listener::kUnix) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return "uid ?";
    *unlimited = cred.uid == 0;
    return "uid " + std::to_string(cred.uid);
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  char host[NI_MAXHOST] = "?";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof host, nullptr, 0,
                NI_NUMERICHOST);
  }
  return host;
}

constexpr int64_t kShedLogIntervalMs = 10000;

}  // namespace

ControlServer::ControlServer(const ControlServerOptions& options, ControlApi& api)
    : options_(options), api_(api), budget_(options.budget) {}

Result<std::unique_ptr<ControlServer>> ControlServer::start(const ControlServerOptions& options,
                                                            ControlApi& api) {
  std::unique_ptr<ControlServer> s(new ControlServer(options, api));
  s->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_fd_ < 0) return sysError("eventfd");
  if (!options.unix_socket.empty()) SWITCHAGG_RETURN_IF_ERROR(s->listenUnix());
  if (!options.tcp_listen.empty()) SWITCHAGG_RETURN_IF_ERROR(s->listenTcp());
  s->accept_thread_ = std::thread([p = s.get()] { p->acceptLoop(); });
  return s;
}

ControlServer::~ControlServer() {
  stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status ControlServer::listenUnix() {
  const std::string& path = options_.unix_socket;
  sockaddr_un sa{};
  if (path.size() >= sizeof sa.sun_path) {
    return Status(Code::kInvalidArgument, "control.unix_socket: path too long: " + path);
  }
  SWITCHAGG_RETURN_IF_ERROR(makeParentDirs(path));
  SWITCHAGG_RETURN_IF_ERROR(clearStaleSocket(path));
  unix_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (unix_fd_ < 0) return sysError("control.unix_socket: socket");
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  if (bind(unix_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    return sysError("control.unix_socket: bind " + path);
  }
  // Anyone may connect: the kernel tells us who they are, policy decides.
  chmod(path.c_str(), 0666);
  if (listen(unix_fd_, 128) != 0) return sysError("control.unix_socket: listen " + path);
  return Status::Ok();
}

Status ControlServer::listenTcp() {
  const std::string& text = options_.tcp_listen;
  size_t colon = text.rfind(':');
  std::string host = text.substr(0, colon);
  std::string port = text.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.empty() || host == "*" ? nullptr : host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    return Status(Code::kInvalidArgument, "control.listen: " + text + ": " + gai_strerror(rc));
  }
  Status st(Code::kIoError, "control.listen: " + text + ": no usable address");
  for (addrinfo* ai = res; ai != nullptr && tcp_fd_ < 0; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) {
      tcp_fd_ = fd;
      break;
    }
    st = sysError("control.listen: bind " + text);
    close(fd);
  }
  freeaddrinfo(res);
  if (tcp_fd_ < 0) return st;
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(tcp_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  char hbuf[NI_MAXHOST], sbuf[NI_MAXSERV];
  getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, hbuf, sizeof hbuf, sbuf, sizeof sbuf,
              NI_NUMERICHOST | NI_NUMERICSERV);
  std::string h = hbuf;
  tcp_address_ = (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + sbuf;
  return Status::Ok();
}

std::string ControlServer::unixAddress() const {
  return options_.unix_socket.empty() ? "" : "unix:" + options_.unix_socket;
}

std::string ControlServer::tcpAddress() const { return tcp_address_; }

void ControlServer::acceptLoop() {
  while (!stopping_.load()) {
    pollfd fds[3] = {{wake_fd_, POLLIN, 0}, {unix_fd_, POLLIN, 0}, {tcp_fd_, POLLIN, 0}};
    int n = poll(fds, 3, -1);  // negative fds are ignored by poll
    if (n < 0 && errno != EINTR) {
      SA_ERROR(kPart, "control: poll: %s", strerror(errno));
      return;
    }
    if (stopping_.load()) return;
    // The Unix socket first: a TCP flood must not delay it.
    for (int i = 1; i < 3; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & POLLIN)) continue;
      int fd = accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) accepted(fd, i == 1 ? Listener::kUnix : Listener::kTcp);
    }
  }
}

void ControlServer::accepted(int fd, Listener listener) {
  bool unlimited = false;
  const std::string peer = peerOf(fd, listener, &unlimited);
  ConnectionBudget::Decision d;
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    d = budget_.arrive(fd, listener, peer, unlimited, ++arrivals_);
    if (d.evict) {
      // Its thread sees end-of-input, answers 503 and closes.
      conn_fds_[*d.evict] = true;
      shutdown(*d.evict, SHUT_RD);
    }
    if (d.admit) {
      ++conn_threads_;
      conn_fds_[fd] = false;
      std::thread([this, fd, listener] { serve(fd, listener); }).detach();
    }
  }
  const char* why = d.why == ConnectionBudget::Why::kPeerLimit ? "peer_limit" : "budget";
  if (d.evict) shed(listener, d.why == ConnectionBudget::Why::kPeerLimit ? "evicted_peer_limit"
                                                                         : "evicted_budget",
                    peer);
  if (d.admit) return;
  shed(listener, why, peer);
  api_.countRefused(ApiError::kOverloaded);
  ControlResponse r = errorResponse(ApiError::kOverloaded, "too many control connections; retry");
  sendAll(fd, formatHttpResponse(r.status, r.content_type, r.body), nowMs() + 100);
  close(fd);
}

void ControlServer::shed(Listener listener, const char* reason, const std::string& peer) {
  api_.countShed(listenerName(listener), reason);
  int64_t now = nowMs();
  uint64_t count = 0;
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    ShedLog& log = shed_log_[listener == Listener::kUnix ? 0 : 1];
    ++log.since;
    if (now - log.last_ms < kShedLogIntervalMs) return;
    count = log.since;
    log.since = 0;
    log.last_ms = now;
  }
  SA_WARN(kPart,
          "control: %s connections over budget: %llu shed in the last %lld s (latest: %s from "
          "%s); see switchagg_control_shed_total",
          listenerName(listener), static_cast<unsigned long long>(count),
          static_cast<long long>(kShedLogIntervalMs / 1000), reason, peer.c_str());
}

void ControlServer::serve(int fd, Listener listener) {
  const bool is_unix = listener == Listener::kUnix;
  int64_t deadline = nowMs() + options_.request_timeout_ms;
  HttpRequest req;
  ParseResult parsed = readRequest(fd, options_.limits, deadline, &req);
  bool evicted = false;
  {
    std::lock_guard<std::mutex> lock(conn_mu_);
    evicted = conn_fds_[fd];
    if (!evicted) budget_.served(fd);
  }
  ControlResponse resp;
  bool answer = true;
  if (evicted) {
    api_.countRefused(ApiError::kOverloaded);
    resp = errorResponse(ApiError::kOverloaded,
                         "request not complete while the control connections were all taken; "
                         "retry");
  } else if (parsed.state == ParseState::kError) {
    answer = parsed.status != 0;
    if (parsed.status == 408) {
      bool unlimited = false;
      shed(listener, "timeout", peerOf(fd, listener, &unlimited));
    }
    if (answer) {
      api_.countRefused(ApiError::kBadRequest);
      resp = errorResponse(ApiError::kBadRequest, parsed.message, parsed.status);
    }
  } else {
    Caller caller;
    caller.via = is_unix ? "unix" : "tcp";
    ucred cred{};
    socklen_t len = sizeof cred;
    if (is_unix && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      caller.authenticated = true;
      caller.uid = cred.uid;
      caller.gid = cred.gid;
    }
    const std::string* munge = is_unix ? nullptr : req.header("x-switchagg-munge");
    Status auth_error;
    if (munge != nullptr) {
      Result<MungeIdentity> id = mungeDecode(*munge, options_.munge_socket);
      if (!id.ok()) {
        auth_error = id.status();
      } else if (Status bound = checkMungeRequestPayload(id->payload, req.method, req.target,
                                                         req.body);
                 !bound.ok()) {
        // A valid credential on a request it was not made for: altered on
        // the way, or a client that signs differently. Whose it was and
        // where it came from are worth an admin's look.
        auth_error = bound;
        bool unlimited = false;
        SA_WARN(kPart, "control tcp: %s %s refused: %s (credential of uid %u, from %s)",
                req.method.c_str(), req.path.c_str(), bound.message().c_str(), id->uid,
                peerOf(fd, listener, &unlimited).c_str());
      } else {
        caller.authenticated = true;
        caller.uid = id->uid;
        caller.gid = id->gid;
      }
    }
    if (!auth_error.ok()) {
      api_.countRefused(ApiError::kUnauthenticated);
      resp = errorResponse(ApiError::kUnauthenticated, auth_error.message());
    } else {
      resp = api_.handle(req, caller);
    }
    SA_DEBUG(kPart, "control %s %s %s -> %d (uid %u%s)", caller.via.c_str(), req.method.c_str(),
             req.path.c_str(), resp.status, caller.uid, caller.authenticated ? "" : ", anonymous");
  }
  if (answer) {
    sendAll(fd, formatHttpResponse(resp.status, resp.content_type, resp.body),
            nowMs() + options_.request_timeout_ms);
  }
  std::lock_guard<std::mutex> lock(conn_mu_);
  if (!evicted) budget_.release(fd);
  conn_fds_.erase(fd);
  close(fd);
  --conn_threads_;
  conn_cv_.notify_all();
}

void ControlServer::stop() {
  if (stopping_.exchange(true)) return;
  uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof one) < 0) SA_WARN(kPart, "control: wake: %s", strerror(errno));
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    std::unique_lock<std::mutex> lock(conn_mu_);
    for (const auto& [fd, evicted] : conn_fds_) shutdown(fd, SHUT_RDWR);
    conn_cv_.wait(lock, [this] { return conn_threads_ == 0; });
  }
  if (unix_fd_ >= 0) {
    close(unix_fd_);
    unlink(options_.unix_socket.c_str());
    unix_fd_ = -1;
  }
  if (tcp_fd_ >= 0) {
    close(tcp_fd_);
    tcp_fd_ = -1;
  }
}

}  // namespace switchagg::agent
