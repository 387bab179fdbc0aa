// A real switchagg-agent process for tests: writes a config into a fresh temp
// dir (Unix socket there, TCP and data plane on port 0), starts the agent,
// waits for its "ready" line, and kills it in the destructor. Any test part
// may link `switchagg_agent_fixture` (tests/agent/CMakeLists.txt).
//
//   auto agent = AgentProcess::start({});          // defaults below
//   ASSERT_TRUE(agent.ok()) << agent.status().toString();
//   ControlClient c({(*agent)->unixAddress()});
//   setenv("SWITCHAGG_AGENT", (*agent)->dataAddress().c_str(), 1);
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "switchagg/common/status.h"

namespace switchagg::testing {

struct AgentOptions {
  // Extra TOML appended to the generated config. The generated part sets
  // only [control] unix_socket/listen and [data] listen, so sections given
  // here must not repeat those keys; use `sets` for anything else.
  std::string extra_toml;
  // `--set KEY=VALUE` arguments (win over the file), e.g. "pool.slots=8".
  std::vector<std::string> sets;
  bool tcp = true;                // also listen on 127.0.0.1:0 for control
  int ready_timeout_ms = 30000;   // UCX start-up can be slow on a loaded box
  std::string binary;             // default: SWITCHAGG_TEST_BIN_DIR/switchagg-agent

  static AgentOptions withSets(std::vector<std::string> sets) {
    AgentOptions o;
    o.sets = std::move(sets);
    return o;
  }
};

class AgentProcess {
 public:
  static Result<std::unique_ptr<AgentProcess>> start(const AgentOptions& options);
  ~AgentProcess();  // SIGTERM, then SIGKILL after 5 s; removes the temp dir
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  const std::string& unixAddress() const { return unix_address_; }  // "unix:/tmp/.../agent.sock"
  const std::string& tcpAddress() const { return tcp_address_; }    // "127.0.0.1:NNNN" or ""
  const std::string& dataAddress() const { return data_address_; }  // "127.0.0.1:NNNN"
  const std::string& dir() const { return dir_; }                   // temp dir (mode 0755)
  const std::string& configPath() const { return config_path_; }
  pid_t pid() const { return pid_; }
  bool running();
  // SIGTERM and wait (up to timeout_ms, then SIGKILL). Returns the exit code,
  // or 128+signal. Idempotent.
  int stop(int timeout_ms = 5000);
  // SIGKILL without cleanup, for crash tests.
  void kill();
  std::string stderrText() const;

 private:
  AgentProcess() = default;

  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string dir_, config_path_, stderr_path_;
  std::string unix_address_, tcp_address_, data_address_;
};

// Runs `argv` (argv[0] a path) to completion with an optional uid/gid switch
// (for "wrong user" tests; needs root) and returns exit code + output.
struct ProcessResult {
  int exit_code = -1;
  std::string out, err;
};
ProcessResult runProcess(const std::vector<std::string>& argv, int64_t uid = -1, int64_t gid = -1,
                         const std::vector<std::string>& env = {}, int timeout_ms = 30000);

// A raw client connection to a control address ("unix:/path" or
// "host:port"), for tests that speak broken HTTP on purpose.
class RawConnection {
 public:
  static Result<std::unique_ptr<RawConnection>> open(const std::string& address);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  bool send(const std::string& bytes);
  // Everything until the peer closes, or what arrived by the timeout.
  std::string readAll(int timeout_ms = 10000);
  int fd() const { return fd_; }

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  int fd_;
};
// open + send + readAll; "" if the connection failed.
std::string rawExchange(const std::string& address, const std::string& bytes,
                        int timeout_ms = 10000);

// A private munged on a socket in `dir` (for munge-over-TCP tests), stopped
// by the destructor.
class MungeDaemon {
 public:
  static Result<std::unique_ptr<MungeDaemon>> start(const std::string& dir);
  ~MungeDaemon();
  MungeDaemon(const MungeDaemon&) = delete;
  MungeDaemon& operator=(const MungeDaemon&) = delete;
  const std::string& socket() const { return socket_; }

 private:
  MungeDaemon() = default;
  pid_t pid_ = -1;
  std::string socket_;
};

// Path of a binary built in this tree (bin/<name>).
std::string binaryPath(const std::string& name);

}  // namespace switchagg::testing
