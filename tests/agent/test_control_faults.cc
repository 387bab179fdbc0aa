// Faults against a real agent process: bad configs refused naming the key,
// hostile HTTP answered without harm, munge credentials (forged, replayed,
// mismatched, sent with a swapped body), a dead agent seen as unreachable
// without hanging.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_fixture.h"
#include "http_message.h"
#include "munge_cred.h"
#include "switchagg/agent/control_client.h"
#include "temp_dir.h"

using namespace switchagg;
using namespace switchagg::agent;
using namespace switchagg::testing;

namespace {

int statusOf(const std::string& response) {
  if (response.size() < 12 || response.rfind("HTTP/1.1 ", 0) != 0) return -1;
  return std::atoi(response.c_str() + 9);
}

TEST(ControlFaults, BadConfigIsRefusedNamingTheKey) {
  switchagg::testing::TempDir tmp("badcfg");
  ASSERT_NE(tmp.path(), "");
  std::string path = tmp.path() + "/agent.toml";
  const std::pair<const char*, const char*> cases[] = {
      {"[pool]\nslots = -3\n", "pool.slots"},
      {"[pool]\nslotz = 3\n", "pool.slotz: unknown key"},
      {"[policy]\ndefault_ttl = \"forever\"\n", "policy.default_ttl"},
      {"[policy]\nmax_slots_per_job = 999\n", "policy.max_slots_per_job"},
      {"[control]\nlisten = \"localhost\"\n", "control.listen"},
      {"[control\n", "agent.toml:1"},
  };
  for (const auto& [toml, key] : cases) {
    std::ofstream(path) << toml;
    ProcessResult r = runProcess({binaryPath("switchagg-agent"), "--config", path});
    EXPECT_EQ(r.exit_code, 2) << toml;
    EXPECT_NE(r.err.find(key), std::string::npos) << toml << "stderr: " << r.err;
  }
  ProcessResult missing = runProcess({binaryPath("switchagg-agent"), "--config", path + ".nope"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find(".nope"), std::string::npos);
  ProcessResult bad_set = runProcess({binaryPath("switchagg-agent"), "--set", "data.threads=-1"});
  EXPECT_EQ(bad_set.exit_code, 2);
  EXPECT_NE(bad_set.err.find("data.threads"), std::string::npos);
}

TEST(ControlFaults, ExampleConfigChecksAndPrints) {
  ProcessResult r = runProcess({binaryPath("switchagg-agent"), "--config",
                                SWITCHAGG_SOURCE_DIR "/config/agent.toml", "--check"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = runProcess({binaryPath("switchagg-agent"), "--print-config", "--set", "pool.slots=50"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[pool]"), std::string::npos);
  EXPECT_NE(r.out.find("\nslots = 50\n"), std::string::npos) << r.out;
  r = runProcess({binaryPath("switchagg-agent"), "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("policy.max_slots_per_user"), std::string::npos);
}

TEST(ControlFaults, HostileRequestsAreAnsweredAndTheAgentLivesOn) {
  auto agent = AgentProcess::start(
      AgentOptions::withSets({"control.request_timeout=500ms", "control.max_connections=4",
                              "control.max_unix_connections=4"}));
  ASSERT_TRUE(agent.ok()) << agent.status().toString();
  const std::string addr = (*agent)->unixAddress();
  const std::string tcp = (*agent)->tcpAddress();

  EXPECT_EQ(statusOf(rawExchange(addr, "HELLO\r\n\r\n")), 400);
  EXPECT_EQ(statusOf(rawExchange(addr, "GET /v1/status HTTP/1.1\nHost: x\n\n")), 400);
  EXPECT_EQ(statusOf(rawExchange(tcp, "GET /v1/status HTTP/3\r\n\r\n")), 505);
  EXPECT_EQ(statusOf(rawExchange(addr, "GET /" + std::string(10000, 'x') + " HTTP/1.1\r\n\r\n")), 414);
  EXPECT_EQ(statusOf(rawExchange(tcp, "GET / HTTP/1.1\r\nA: " + std::string(40000, 'b') + "\r\n\r\n")),
            431);
  EXPECT_EQ(statusOf(rawExchange(addr, "POST /v1/leases HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n")),
            413);
  EXPECT_EQ(statusOf(rawExchange(addr, "POST /v1/leases HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")),
            501);
  std::string junk;
  for (int i = 0; i < 4096; ++i) junk += static_cast<char>((i * 7919) & 0xff);
  std::string reply = rawExchange(tcp, junk);
  EXPECT_TRUE(reply.empty() || statusOf(reply) >= 400) << reply;
  std::string body = "{\"job\": [[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]}";
  reply = rawExchange(addr, "POST /v1/leases HTTP/1.1\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(statusOf(reply), 400) << reply;
  EXPECT_NE(reply.find("\"error\":\"bad_request\""), std::string::npos) << reply;

  // Slow clients: a request not complete within control.request_timeout gets 408.
  auto slow = RawConnection::open(addr);
  ASSERT_TRUE(slow.ok());
  (*slow)->send("GET /v1/status HTTP/1.1\r\n");
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(statusOf((*slow)->readAll(5000)), 408);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));

  // More idle connections than control.max_unix_connections: a newcomer
  // with a whole request is served at once, and the oldest idle connection
  // is cut with 503 overloaded; the agent does not stall.
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 4; ++i) {
    auto c = RawConnection::open(addr);
    ASSERT_TRUE(c.ok());
    idle.push_back(std::move(*c));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(statusOf(rawExchange(addr, "GET /v1/status HTTP/1.1\r\n\r\n", 2000)), 200);
  std::string cut = idle[0]->readAll(2000);
  EXPECT_EQ(statusOf(cut), 503) << cut;
  EXPECT_NE(cut.find("\"error\":\"overloaded\""), std::string::npos) << cut;
  idle.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // their 408s go out

  // Clients that connect and vanish.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(RawConnection::open(addr).ok());

  // Their threads end as soon as they see the close; then service resumes.
  ControlClient client(addr);
  ApiResult<AgentStatus> st = client.status();
  for (int i = 0; i < 50 && !st.ok(); ++i) {
    EXPECT_EQ(st.error(), ApiError::kOverloaded) << st.status().toString();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    st = client.status();
  }
  ASSERT_TRUE(st.ok()) << st.status().toString();
  EXPECT_TRUE((*agent)->running());
  ApiResult<ControlReply> m = client.request("GET", "/metrics");
  ASSERT_TRUE(m.ok());
  EXPECT_NE(m->body.find("switchagg_control_refused_total{error=\"bad_request\"}"), std::string::npos);
  EXPECT_NE(m->body.find("switchagg_control_refused_total{error=\"overloaded\"}"), std::string::npos)
      << m->body;
  // At least the idle connection cut above (more when the vanishing clients
  // below were still open as others arrived).
  EXPECT_NE(m->body.find("switchagg_control_shed_total{listener=\"unix\",reason=\"evicted_budget\"} "),
            std::string::npos) << m->body;
  EXPECT_EQ((*agent)->stop(), 0) << (*agent)->stderrText();
}

TEST(ControlFaults, DeadAgentIsUnreachableNotAHang) {
  auto agent = AgentProcess::start({});
  ASSERT_TRUE(agent.ok()) << agent.status().toString();
  std::string addr = (*agent)->unixAddress();
  std::string tcp = (*agent)->tcpAddress();
  // A second agent on the same socket refuses to start rather than steal it.
  ProcessResult second = runProcess({binaryPath("switchagg-agent"), "--config",
                                     (*agent)->configPath()});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("another agent listens"), std::string::npos) << second.err;

  (*agent)->kill();
  ControlClientOptions o;
  o.address = tcp;
  o.timeout_ms = 2000;
  auto t0 = std::chrono::steady_clock::now();
  ApiResult<AgentStatus> st = ControlClient(o).status();
  EXPECT_EQ(st.error(), ApiError::kUnreachable);
  EXPECT_NE(st.status().message().find(tcp), std::string::npos) << st.status().message();
  ProcessResult r = runProcess({binaryPath("switchagg-ctl"), "--agent", addr, "status"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find(addr), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // A bad address is a usage error, not a hang.
  r = runProcess({binaryPath("switchagg-ctl"), "--agent", "nowhere", "status"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// Reads a request from connection `c`, answers it as an agent's
// GET /v1/status would (version "test") and closes it.
void answerStatus(int c) {
  char buf[4096];
  (void)!read(c, buf, sizeof buf);
  const std::string body = "{\"version\":\"test\",\"data_address\":\"x:1\"}";
  const std::string r = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  (void)!write(c, r.data(), r.size());
  close(c);
}

// A Unix-socket "agent" that closes its first `cut` connections without a
// word (as a real one sheds a connection still reading its request under a
// flood), then answers every request with a status document.
class CuttingServer {
 public:
  explicit CuttingServer(int cut) : cut_(cut), dir_("cut", 0700) {
    path_ = dir_.path() + "/agent.sock";
    fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path_.c_str());
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    thread_ = std::thread([this] {
      for (;;) {
        const int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        if (accepted_++ < cut_) {
          close(c);
          continue;
        }
        answerStatus(c);
      }
    });
  }
  ~CuttingServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string address() const { return "unix:" + path_; }
  int accepted() const { return accepted_; }

 private:
  int cut_;
  TempDir dir_;
  std::string path_;
  int fd_ = -1;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

TEST(ControlFaults, AConnectionCutBeforeAnyAnswerIsTriedAgainUntilTheTimeout) {
  {
    CuttingServer once(1);
    ApiResult<AgentStatus> st = ControlClient(once.address()).status();
    ASSERT_TRUE(st.ok()) << st.status().toString();
    EXPECT_EQ(st->version, "test");
    EXPECT_EQ(once.accepted(), 2);
  }
  {
    // Cut three times in a row (a flood the agent sheds): still answered.
    CuttingServer thrice(3);
    ApiResult<AgentStatus> st = ControlClient(thrice.address()).status();
    ASSERT_TRUE(st.ok()) << st.status().toString();
    EXPECT_EQ(thrice.accepted(), 4);
  }
  // Cut every time: tried again until the request's timeout, then
  // unreachable, naming what happened, within the timeout.
  CuttingServer always(100000);
  ControlClientOptions o;
  o.address = always.address();
  o.timeout_ms = 400;
  const auto t0 = std::chrono::steady_clock::now();
  ApiResult<AgentStatus> st = ControlClient(o).status();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(st.error(), ApiError::kUnreachable);
  EXPECT_NE(st.status().message().find("closed before any answer"), std::string::npos)
      << st.status().message();
  EXPECT_GT(always.accepted(), 3);
  EXPECT_LT(ms, 1500) << "the retries outlived the request's timeout";
}

// A Unix socket whose listen queue is full (a connection flood the agent
// has not accepted yet) refuses connect with EAGAIN: the socket is not
// connecting, so the client must try connect again rather than wait for
// POLLOUT and send on an unconnected socket (ENOTCONN: "unreachable", which
// a Slurm prolog under a flood once reported for a live agent).
TEST(ControlFaults, AFullListenQueueIsWaitedOutNotTakenForADeadAgent) {
  TempDir dir("queue", 0700);
  const std::string path = dir.path() + "/agent.sock";
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
  const int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_EQ(bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ASSERT_EQ(::listen(lfd, 0), 0);
  // Fill the queue until a connect is refused with EAGAIN.
  int queued = 0;
  bool full = false;
  for (int i = 0; i < 64 && !full; ++i) {
    const int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (connect(c, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      ++queued;
    } else {
      ASSERT_EQ(errno, EAGAIN) << strerror(errno);
      full = true;
    }
    close(c);  // still queued at the listener until accepted
  }
  ASSERT_TRUE(full) << "the listen queue never filled";
  // The "agent" starts accepting 300 ms later and answers the next caller.
  std::thread server([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int i = 0; i < queued; ++i) close(accept(lfd, nullptr, nullptr));
    // The client's connection, if it comes within 5 s (a client that gave
    // up has no connection queued: the test fails on its status, not hangs).
    pollfd p{lfd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return;
    const int c = accept(lfd, nullptr, nullptr);
    answerStatus(c);
  });
  const auto t0 = std::chrono::steady_clock::now();
  ApiResult<AgentStatus> st = ControlClient("unix:" + path).status();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
  server.join();
  close(lfd);
  ASSERT_TRUE(st.ok()) << st.status().toString();
  EXPECT_EQ(st->version, "test");
  EXPECT_GE(ms, 250) << "the client got through a full queue without waiting?";
}

// A private munged and an agent that decodes credentials with it.
struct MungedAgent {
  // Other uids must reach munged's socket; munged wants the dir unwritable.
  TempDir dir{"munge", 0755};
  std::unique_ptr<MungeDaemon> munged;
  std::unique_ptr<AgentProcess> agent;
  std::string sock;

  void start(std::vector<std::string> sets) {
    ASSERT_NE(dir.path(), "");
    auto m = MungeDaemon::start(dir.path());
    ASSERT_TRUE(m.ok()) << m.status().toString();
    munged = std::move(*m);
    sock = munged->socket();
    sets.push_back("control.munge_socket=" + sock);
    auto a = AgentProcess::start(AgentOptions::withSets(std::move(sets)));
    ASSERT_TRUE(a.ok()) << a.status().toString();
    agent = std::move(*a);
  }
};

TEST(ControlFaults, MungeOverTcpIdentifiesCallersAndRejectsReplays) {
  MungedAgent m;
  ASSERT_NO_FATAL_FAILURE(m.start({"policy.allowed_users=1000"}));
  const std::string& sock = m.sock;
  const std::string tcp = m.agent->tcpAddress();

  ControlClientOptions o;
  o.address = tcp;
  o.munge_socket = sock;
  ControlClient root(o);
  ApiResult<LeaseView> l = root.createLease("mj", 4242, 2, 600);  // root acts for any uid
  ASSERT_TRUE(l.ok()) << l.status().toString();
  EXPECT_EQ(l->uid, 4242u);

  // munge carries the caller's uid: nobody is denied by policy (not "anonymous").
  ProcessResult r = runProcess({binaryPath("switchagg-ctl"), "--agent", tcp, "lease", "create",
                                "--job", "n1"},
                               65534, 65534, {"SWITCHAGG_MUNGE_SOCKET=" + sock});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("policy_denied"), std::string::npos) << r.err;
  r = runProcess({binaryPath("switchagg-ctl"), "--agent", tcp, "lease", "create", "--job", "u1"},
                 1000, 1000, {"SWITCHAGG_MUNGE_SOCKET=" + sock});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("uid 1000"), std::string::npos) << r.out;

  // A captured credential cannot be replayed, nor reused for another request.
  // (Signed as clients before the body binding did, the request line alone:
  // still good for a request without a body.)
  Result<std::string> cred = mungeEncode("DELETE /v1/leases/mj", sock);
  ASSERT_TRUE(cred.ok()) << cred.status().toString();
  std::string del = "DELETE /v1/leases/mj HTTP/1.1\r\nX-Switchagg-Munge: " + *cred + "\r\n\r\n";
  std::string first = rawExchange(tcp, del);
  EXPECT_EQ(statusOf(first), 200) << first;
  EXPECT_NE(first.find("\"deleted\":true"), std::string::npos);
  std::string replay = rawExchange(tcp, del);
  EXPECT_EQ(statusOf(replay), 401) << replay;
  EXPECT_NE(replay.find("unauthenticated"), std::string::npos);
  Result<std::string> other = mungeEncode("GET /v1/status", sock);
  ASSERT_TRUE(other.ok());
  std::string mismatched = rawExchange(
      tcp, "POST /v1/drain HTTP/1.1\r\nX-Switchagg-Munge: " + *other + "\r\n\r\n");
  EXPECT_EQ(statusOf(mismatched), 401) << mismatched;
  EXPECT_NE(mismatched.find("another request"), std::string::npos) << mismatched;
  std::string forged = rawExchange(
      tcp, "POST /v1/drain HTTP/1.1\r\nX-Switchagg-Munge: MUNGE:AAAAforged:\r\n\r\n");
  EXPECT_EQ(statusOf(forged), 401) << forged;
  EXPECT_FALSE(root.status()->draining);
}


// The create request a client sends over TCP, as a man in the middle sees
// it: a one-shot TCP "agent" on 127.0.0.1 reads the request `call` makes
// to the address it is given and answers 503, so nothing reaches munged.
HttpRequest captureRequest(const std::function<void(const std::string& address)>& call) {
  HttpRequest req;
  const int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(lfd, 4) != 0 ||
      getsockname(lfd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    ADD_FAILURE() << "capture listener: " << strerror(errno);
    close(lfd);
    return req;
  }
  std::thread client(call, "127.0.0.1:" + std::to_string(ntohs(sa.sin_port)));
  pollfd p{lfd, POLLIN, 0};
  const int c = poll(&p, 1, 10000) == 1 ? accept(lfd, nullptr, nullptr) : -1;
  std::string data;
  ParseResult parsed;
  char buf[4096];
  while (c >= 0 && parsed.state == ParseState::kNeedMore) {
    pollfd in{c, POLLIN, 0};
    if (poll(&in, 1, 10000) != 1) break;
    const ssize_t n = read(c, buf, sizeof buf);
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
    parsed = parseHttpRequest(data, HttpLimits{}, &req);
  }
  EXPECT_EQ(parsed.state, ParseState::kComplete) << "captured: " << data;
  if (c >= 0) {
    const std::string r = formatHttpResponse(
        503, "application/json", "{\"error\":\"draining\",\"message\":\"captured\"}");
    (void)!write(c, r.data(), r.size());
    close(c);
  }
  close(lfd);  // a retry finds nobody listening
  client.join();
  return req;
}

std::string resend(const std::string& address, const HttpRequest& req, const std::string& body) {
  const std::string* cred = req.header("x-switchagg-munge");
  HttpHeaders headers;
  if (cred != nullptr) headers.emplace_back("X-Switchagg-Munge", *cred);
  return rawExchange(address, formatHttpRequest(req.method, req.target, "x", headers, body));
}

// A captured credential replayed with a swapped body (another uid, more
// slots) is refused: the credential signs the body's digest, not only the
// request line. The legitimate request, sent first, is accepted.
TEST(ControlFaults, MungeCredentialBindsTheRequestBody) {
  MungedAgent m;
  ASSERT_NO_FATAL_FAILURE(m.start({}));
  const std::string& sock = m.sock;
  const std::string tcp = m.agent->tcpAddress();

  // What the Slurm prolog sends as root: a lease for uid 1000, 2 slots.
  auto captureCreate = [&] {
    return captureRequest([&](const std::string& address) {
      ControlClientOptions o;
      o.address = address;
      o.munge_socket = sock;
      (void)ControlClient(o).createLease("mitm", 1000, 2, 600);
    });
  };
  const std::pair<const char*, nlohmann::json> swaps[] = {{"uid", 4242}, {"slots", 4}};
  for (const auto& [field, value] : swaps) {
    SCOPED_TRACE(field);
    HttpRequest captured = captureCreate();
    ASSERT_EQ(captured.method + " " + captured.target, "POST /v1/leases");
    ASSERT_NE(captured.header("x-switchagg-munge"), nullptr);
    nlohmann::json body = nlohmann::json::parse(captured.body);
    ASSERT_NE(body[field], value);
    body[field] = value;
    std::string swapped = resend(tcp, captured, body.dump());
    EXPECT_EQ(statusOf(swapped), 401) << swapped;
    EXPECT_NE(swapped.find("\"error\":\"unauthenticated\""), std::string::npos) << swapped;
    EXPECT_NE(swapped.find("does not match the request body"), std::string::npos) << swapped;
    // munged has seen the credential now: the original body comes too late.
    std::string late = resend(tcp, captured, captured.body);
    EXPECT_EQ(statusOf(late), 401) << late;
  }
  // Logged with whose credential it was and where it came from, and counted.
  const std::string log = m.agent->stderrText();
  EXPECT_NE(log.find("control tcp: POST /v1/leases refused: munge credential does not match the "
                     "request body"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("(credential of uid 0, from 127.0.0.1"), std::string::npos) << log;
  std::string metrics = rawExchange(m.agent->unixAddress(), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_NE(metrics.find("switchagg_control_refused_total{error=\"unauthenticated\"} 4"),
            std::string::npos)
      << metrics;
  ControlClient admin(m.agent->unixAddress());
  ApiResult<std::vector<LeaseView>> leases = admin.listLeases();
  ASSERT_TRUE(leases.ok()) << leases.status().toString();
  EXPECT_TRUE(leases->empty()) << "a tampered request made lease " << leases->front().job
                               << " for uid " << leases->front().uid;

  // The request as the client made it is accepted.
  HttpRequest captured = captureCreate();
  std::string accepted = resend(tcp, captured, captured.body);
  EXPECT_EQ(statusOf(accepted), 201) << accepted;
  leases = admin.listLeases();
  ASSERT_TRUE(leases.ok()) << leases.status().toString();
  ASSERT_EQ(leases->size(), 1u);
  EXPECT_EQ(leases->front().job, "mitm");
  EXPECT_EQ(leases->front().uid, 1000u);
  EXPECT_EQ(leases->front().slots, 2);

  // A client that signs the request line only (older than the body
  // binding) is told so when its request has a body; without a body there
  // is nothing to bind and it is still accepted (the DELETE in
  // MungeOverTcpIdentifiesCallersAndRejectsReplays).
  Result<std::string> line_only = mungeEncode("POST /v1/leases", sock);
  ASSERT_TRUE(line_only.ok()) << line_only.status().toString();
  HttpRequest old_client = captured;
  old_client.headers = {{"x-switchagg-munge", *line_only}};
  std::string old = resend(tcp, old_client, "{\"job\":\"old1\",\"uid\":1000,\"slots\":1}");
  EXPECT_EQ(statusOf(old), 401) << old;
  EXPECT_NE(old.find("signs the request line only"), std::string::npos) << old;
}

}  // namespace
