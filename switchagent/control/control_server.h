// The control API's listeners: a Unix socket (callers identified by
// SO_PEERCRED) and a TCP socket (callers identified by a munge credential
// bound to the request line, else anonymous). One accept thread polls both;
// each connection gets a short-lived thread that reads one bounded request
// within control.request_timeout, answers, and closes. Connections are
// admitted by a ConnectionBudget (separate Unix and TCP budgets, a share
// per peer, the oldest half-sent request cut for a newcomer); what it sheds
// is counted for /metrics and logged at most once per 10 s per listener.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <map>
#include <string>
#include <thread>

#include "connection_budget.h"
#include "control_api.h"
#include "http_message.h"

namespace switchagg::agent {

struct ControlServerOptions {
  std::string unix_socket;     // "" = no Unix listener
  std::string tcp_listen;      // "host:port" (port 0 = any), "" = no TCP listener
  std::string munge_socket;    // "" = libmunge default
  int64_t request_timeout_ms = 2000;
  BudgetLimits budget;
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
  void accepted(int fd, Listener listener);
  void serve(int fd, Listener listener);
  // Counts (and at most every 10 s per listener logs) a shed connection.
  void shed(Listener listener, const char* reason, const std::string& peer);

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
  ConnectionBudget budget_;
  int64_t arrivals_ = 0;
  std::map<int, bool> conn_fds_;  // open connections (true: evicted), cut on stop()
  int conn_threads_ = 0;
  struct ShedLog {
    int64_t last_ms = 0;
    uint64_t since = 0;
  } shed_log_[2];
};

}  // namespace switchagg::agent
