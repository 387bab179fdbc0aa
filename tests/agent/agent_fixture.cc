#include "agent_fixture.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace switchagg::testing {

namespace {

int64_t nowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Value of "key=" in the ready line ("... control=unix:/x tcp=h:p data=h:p").
std::string field(const std::string& line, const std::string& key) {
  size_t p = line.find(" " + key + "=");
  if (p == std::string::npos) return "";
  p += key.size() + 2;
  size_t e = line.find_first_of(" \n", p);
  return line.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Reads two pipes until both reach EOF or the deadline passes.
void drainBoth(int fd1, std::string* out1, int fd2, std::string* out2, int64_t deadline) {
  char buf[4096];
  pollfd p[2] = {{fd1, POLLIN, 0}, {fd2, POLLIN, 0}};
  std::string* outs[2] = {out1, out2};  // fd -1: that slot is unused
  while (p[0].fd >= 0 || p[1].fd >= 0) {
    int64_t left = deadline - nowMs();
    if (left <= 0) return;
    if (poll(p, 2, static_cast<int>(left)) <= 0) return;
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || p[i].revents == 0) continue;
      ssize_t n = read(p[i].fd, buf, sizeof buf);
      if (n <= 0) p[i].fd = -1;
      else outs[i]->append(buf, static_cast<size_t>(n));
    }
  }
}

// In a forked child: exec args[0] with args; never returns.
[[noreturn]] void execArgs(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

}  // namespace

std::string binaryPath(const std::string& name) {
  const char* dir = std::getenv("SWITCHAGG_TEST_BIN_DIR");
  return std::string(dir != nullptr && *dir ? dir : SWITCHAGG_TEST_BIN_DIR) + "/" + name;
}

Result<std::unique_ptr<AgentProcess>> AgentProcess::start(const AgentOptions& options) {
  std::unique_ptr<AgentProcess> a(new AgentProcess());
  char tmpl[] = "/tmp/switchagg-agent-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status(Code::kIoError, "mkdtemp failed");
  a->dir_ = tmpl;
  chmod(tmpl, 0755);  // other uids (wrong-user tests) must reach the socket
  a->config_path_ = a->dir_ + "/agent.toml";
  a->stderr_path_ = a->dir_ + "/agent.stderr";
  {
    std::ofstream cfg(a->config_path_);
    cfg << "[control]\nunix_socket = \"" << a->dir_ << "/agent.sock\"\n"
        << "listen = \"" << (options.tcp ? "127.0.0.1:0" : "") << "\"\n"
        << "[data]\nlisten = \"127.0.0.1:0\"\n"
        << options.extra_toml << "\n";
  }
  std::vector<std::string> args = {options.binary.empty() ? binaryPath("switchagg-agent")
                                                          : options.binary,
                                   "--config", a->config_path_};
  for (const std::string& s : options.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return Status(Code::kIoError, "pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    int err = open(a->stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) dup2(err, 2);
    execArgs(args);
  }
  close(out_pipe[1]);
  a->pid_ = pid;
  std::string out;
  int64_t deadline = nowMs() + options.ready_timeout_ms;
  while (out.find('\n') == std::string::npos && nowMs() < deadline) {
    pollfd p{out_pipe[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[512];
    ssize_t n = read(out_pipe[0], buf, sizeof buf);
    if (n <= 0) break;  // the agent exited before it was ready
    out.append(buf, static_cast<size_t>(n));
  }
  close(out_pipe[0]);
  if (out.rfind("switchagg-agent ready", 0) != 0) {
    int code = a->stop(2000);
    return Status(Code::kIoError, "agent did not become ready (exit " + std::to_string(code) +
                                      "); stderr:\n" + a->stderrText());
  }
  a->unix_address_ = field(out, "control");
  a->tcp_address_ = field(out, "tcp");
  a->data_address_ = field(out, "data");
  return a;
}

AgentProcess::~AgentProcess() {
  stop();
  if (!dir_.empty() && std::getenv("SWITCHAGG_TEST_KEEP") == nullptr) {
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir_.c_str());
  }
}

bool AgentProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = exitCodeOf(status);
    pid_ = -1;
    return false;
  }
  return true;
}

int AgentProcess::stop(int timeout_ms) {
  if (pid_ <= 0) return exit_code_;
  ::kill(pid_, SIGTERM);
  int64_t deadline = nowMs() + timeout_ms;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (nowMs() >= deadline) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  exit_code_ = exitCodeOf(status);
  pid_ = -1;
  return exit_code_;
}

void AgentProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  exit_code_ = exitCodeOf(status);
  pid_ = -1;
}

std::string AgentProcess::stderrText() const { return readFile(stderr_path_); }

namespace {

// A copy of `path` that any uid can execute. The build tree may sit below a
// directory only root can enter (a CI clone in `mktemp -d`, mode 0700), so a
// program run as another user is copied once into a world-readable
// directory, removed when the test process exits.
std::string reachableCopy(const std::string& path) {
  static struct Copies {
    std::string dir;
    std::map<std::string, std::string> by_path;
    ~Copies() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } copies;
  namespace fs = std::filesystem;
  auto it = copies.by_path.find(path);
  if (it != copies.by_path.end()) return it->second;
  if (copies.dir.empty()) {
    char tmpl[] = "/tmp/switchagg-runas-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return path;
    chmod(tmpl, 0755);
    copies.dir = tmpl;
  }
  const std::string copy = copies.dir + "/" + fs::path(path).filename().string();
  std::error_code ec;
  fs::copy_file(path, copy, fs::copy_options::overwrite_existing, ec);
  if (ec) return path;
  chmod(copy.c_str(), 0755);
  return copies.by_path[path] = copy;
}

}  // namespace

ProcessResult runProcess(const std::vector<std::string>& argv_in, int64_t uid, int64_t gid,
                         const std::vector<std::string>& env, int timeout_ms) {
  ProcessResult result;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  std::vector<std::string> args = argv_in;
  if (uid >= 0 && !args.empty() && args[0].find('/') != std::string::npos)
    args[0] = reachableCopy(args[0]);
  std::vector<std::string> envs = env;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (gid >= 0 && (setgroups(0, nullptr) != 0 || setgid(static_cast<gid_t>(gid)) != 0)) _exit(126);
    if (uid >= 0 && setuid(static_cast<uid_t>(uid)) != 0) _exit(126);
    for (std::string& e : envs) putenv(e.data());
    execArgs(args);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  int64_t deadline = nowMs() + timeout_ms;
  drainBoth(out_pipe[0], &result.out, err_pipe[0], &result.err, deadline);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  if (waitpid(pid, &status, WNOHANG) == 0) {
    while (nowMs() < deadline && waitpid(pid, &status, WNOHANG) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (nowMs() >= deadline) {
      ::kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  }
  result.exit_code = exitCodeOf(status);
  return result;
}

}  // namespace switchagg::testing

namespace switchagg::testing {

Result<std::unique_ptr<RawConnection>> RawConnection::open(const std::string& address) {
  int fd = -1;
  if (address.rfind("unix:", 0) == 0) {
    std::string path = address.substr(5);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (path.size() >= sizeof sa.sun_path) return Status(Code::kInvalidArgument, "path too long");
    memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      close(fd);
      return Status(Code::kIoError, "connect " + address + ": " + strerror(errno));
    }
  } else {
    size_t colon = address.rfind(':');
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(std::atoi(address.c_str() + colon + 1)));
    inet_pton(AF_INET, address.substr(0, colon).c_str(), &sa.sin_addr);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
      close(fd);
      return Status(Code::kIoError, "connect " + address + ": " + strerror(errno));
    }
  }
  return std::unique_ptr<RawConnection>(new RawConnection(fd));
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) close(fd_);
}

bool RawConnection::send(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string RawConnection::readAll(int timeout_ms) {
  std::string out, none;
  drainBoth(fd_, &out, -1, &none, nowMs() + timeout_ms);
  return out;
}

std::string rawExchange(const std::string& address, const std::string& bytes, int timeout_ms) {
  auto c = RawConnection::open(address);
  if (!c.ok()) return "";
  (*c)->send(bytes);
  return (*c)->readAll(timeout_ms);
}

Result<std::unique_ptr<MungeDaemon>> MungeDaemon::start(const std::string& dir) {
  std::unique_ptr<MungeDaemon> m(new MungeDaemon());
  m->socket_ = dir + "/munge.sock";
  std::vector<std::string> args = {"/usr/sbin/munged", "-F", "-f", "--socket=" + m->socket_,
                                   "--pid-file=" + dir + "/munged.pid",
                                   "--log-file=" + dir + "/munged.log",
                                   "--seed-file=" + dir + "/munged.seed", "--num-threads=2"};
  pid_t pid = fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDWR);
    dup2(null, 1);
    dup2(null, 2);
    execArgs(args);
  }
  m->pid_ = pid;
  int64_t deadline = nowMs() + 10000;
  struct stat st {};
  while (stat(m->socket_.c_str(), &st) != 0) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      m->pid_ = -1;
      return Status(Code::kIoError, "munged exited (" + std::to_string(exitCodeOf(status)) +
                                        "): " + readFile(dir + "/munged.log"));
    }
    if (nowMs() > deadline) return Status(Code::kTimeout, "munged did not create its socket");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return m;
}

MungeDaemon::~MungeDaemon() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
}

}  // namespace switchagg::testing
