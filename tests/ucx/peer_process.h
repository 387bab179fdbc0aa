// Spawns test-peer processes (fork/exec) and speaks their line protocol
// (see test_peer.cc). Every read is bounded; leftover children are killed.
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "peer_util.h"

namespace switchagg::test {

// UCX_TLS for a SWITCHAGG_TEST_TRANSPORT value (tcp | shm; unset = UCX's
// own choice). shm keeps tcp for PeerGroup's failure sentinel and the
// listener's connection manager; data lanes still pick shared memory.
inline std::string transportName() {
  const char* t = std::getenv("SWITCHAGG_TEST_TRANSPORT");
  return t == nullptr ? "" : t;
}
inline std::string transportTls() {
  if (transportName() == "shm") return "posix,sysv,cma,tcp,self";
  return transportName();
}

class PeerProcess {
 public:
  PeerProcess(const std::string& scenario, int rank, int size,
              const std::map<std::string, std::string>& env) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      std::string tls = transportTls();
      if (!tls.empty()) setenv("UCX_TLS", tls.c_str(), 1);
      // The once-per-process "no RDMA device" line is tested in tests/roce.
      setenv("SWITCHAGG_LOG_LEVEL", "error", 0);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::string r = std::to_string(rank), n = std::to_string(size);
      execl(SWITCHAGG_UCX_TEST_PEER, SWITCHAGG_UCX_TEST_PEER, scenario.c_str(), r.c_str(),
            n.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~PeerProcess() {
    kill();
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
  }
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // The next line, or "" on EOF / after `timeout_ms`.
  std::string readLine(int64_t timeout_ms) {
    const int64_t deadline = monotonicMs() + timeout_ms;
    for (;;) {
      size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      int64_t left = deadline - monotonicMs();
      if (left <= 0) return "";
      pollfd p{from_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char chunk[4096];
      ssize_t n = read(from_, chunk, sizeof(chunk));
      if (n <= 0) return "";
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  // Lines until one starts with `prefix` (returned); "" on timeout/EOF.
  std::string readUntil(const std::string& prefix, int64_t timeout_ms) {
    const int64_t deadline = monotonicMs() + timeout_ms;
    for (;;) {
      std::string line = readLine(deadline - monotonicMs());
      if (line.empty() && monotonicMs() >= deadline) return "";
      if (line.rfind(prefix, 0) == 0) return line;
      if (line.rfind("DONE", 0) == 0 && prefix != "DONE") return line;
      if (line.empty()) return "";
    }
  }

  void writeLine(const std::string& line) {
    std::string s = line + "\n";
    ssize_t off = 0;
    while (off < static_cast<ssize_t>(s.size())) {
      ssize_t n = write(to_, s.data() + off, s.size() - off);
      if (n <= 0) return;
      off += n;
    }
  }

  void kill(int sig = SIGKILL) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Exit code after waiting up to `timeout_ms`; -1 if it had to be killed.
  int join(int64_t timeout_ms) {
    const int64_t deadline = monotonicMs() + timeout_ms;
    while (pid_ > 0) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (monotonicMs() >= deadline) {
        kill();
        return -1;
      }
      usleep(5000);
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string buffer_;
};

// "RESULT a=1 b=x" -> {a:1, b:x}
inline std::map<std::string, std::string> parseResult(const std::string& line) {
  std::map<std::string, std::string> out;
  size_t pos = line.find(' ');
  while (pos != std::string::npos) {
    size_t next = line.find(' ', pos + 1);
    std::string kv = line.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
    pos = next;
  }
  return out;
}

}  // namespace switchagg::test
