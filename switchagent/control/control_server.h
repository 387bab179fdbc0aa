// The control API's listeners: a Unix socket (callers identified by
// SO_PEERCRED) and a TCP socket (callers identified by a munge credential
// bound to the request line, else anonymous). One accept thread polls both;
// each connection gets a short-lived thread that reads one bounded request
// within control.request_timeout, answers, and closes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "control_api.h"
#include "http_message.h"

namespace switchagg::agent {

struct ControlServerOptions {
  std::string unix_socket;     // "" = no Unix listener
  std::string tcp_listen;      // "host:port" (port 0 = any), "" = no TCP listener
  std::string munge_socket;    // "" = libmunge default
  int64_t request_timeout_ms = 5000;
  int max_connections = 64;
  HttpLimits limits;
};

class ControlServer {
 public:
  // Binds both listeners (errors name the address) and starts accepting.
  static Result<std::unique_ptr<ControlServer>> start(const ControlServerOptions& options,
                                                      ControlApi& api);
  ~ControlServer();  // stop()
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Stops accepting, cuts open connections, waits for their threads, and
  // removes the Unix socket file.
  void stop();
  std::string unixAddress() const;  // "unix:/path" or ""
  std::string tcpAddress() const;   // "host:port" with the bound port, or ""

 private:
  ControlServer(const ControlServerOptions& options, ControlApi& api);
  Status listenUnix();
  Status listenTcp();
  void acceptLoop();
  void accepted(int fd, bool is_unix);
  void serve(int fd, bool is_unix);

  const ControlServerOptions options_;
  ControlApi& api_;
  int unix_fd_ = -1;
  int tcp_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the accept loop on stop()
  std::string tcp_address_;
  std::thread accept_thread_;
  std::atomic<bool> stopping_{false};

  std::mutex conn_mu_;
  std::condition_variable conn_cv_;
  std::set<int> conn_fds_;  // open connections, cut on stop()
  int conn_threads_ = 0;
};

}  // namespace switchagg::agent
