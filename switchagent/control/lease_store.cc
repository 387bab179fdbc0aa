#include "lease_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "switchagg/common/log.h"

namespace switchagg::agent {

using nlohmann::json;

namespace {

constexpr const char* kPart = "agent";
constexpr const char* kFormat = "switchagg-leases";
constexpr int kVersion = 1;

Status sysError(const std::string& what, const std::string& path) {
  return Status(Code::kIoError, what + " " + path + ": " + std::strerror(errno));
}

// The file holds what LeaseToken::hex() wrote: lowercase only.
std::optional<LeaseToken> tokenOf(const json& j) {
  if (!j.is_string()) return std::nullopt;
  const std::string& hex = j.get_ref<const std::string&>();
  std::optional<LeaseToken> t = LeaseToken::fromHex(hex);
  if (!t || t->hex() != hex) return std::nullopt;
  return t;
}

Status corrupt(const std::string& why) { return Status(Code::kProtocol, why); }

// One lease entry; `where` ("leases[3]") prefixes every complaint.
Result<Lease> decodeLease(const json& e, const std::string& where) {
  if (!e.is_object()) return corrupt(where + " is not an object");
  auto integer = [&](const char* key, int64_t lo, int64_t hi) -> Result<int64_t> {
    auto it = e.find(key);
    if (it == e.end() || !it->is_number_integer()) {
      return corrupt(where + "." + key + " is missing or not an integer");
    }
    int64_t v = it->get<int64_t>();
    if (v < lo || v > hi) return corrupt(where + "." + key + " is out of range");
    return v;
  };
  Lease l;
  auto job = e.find("job");
  if (job == e.end() || !job->is_string() || !isValidJobId(job->get<std::string>())) {
    return corrupt(where + ".job is missing or not a valid job id");
  }
  l.job = job->get<std::string>();
  auto token = e.find("token");
  std::optional<LeaseToken> parsed = token == e.end() ? std::nullopt : tokenOf(*token);
  if (!parsed) {
    return corrupt(where + ".token is missing or not 32 lowercase hex characters");
  }
  l.token = *parsed;
  Result<int64_t> uid = integer("uid", 0, UINT32_MAX);
  Result<int64_t> slots = integer("slots", 1, 1 << 20);
  Result<int64_t> ttl = integer("ttl_ms", kMinTtlMs, INT64_MAX / 4);
  Result<int64_t> expires = integer("expires_at_wall_ms", 0, INT64_MAX / 4);
  Result<int64_t> granted = integer("granted_at_wall_ms", 0, INT64_MAX / 4);
  for (const Result<int64_t>* r : {&uid, &slots, &ttl, &expires, &granted}) {
    if (!r->ok()) return r->status();
  }
  l.uid = static_cast<uint32_t>(*uid);
  l.slots = static_cast<int>(*slots);
  l.ttl_ms = *ttl;
  l.expires_at_ms = *expires;
  l.granted_at_wall_ms = *granted;
  return l;
}

std::string utcStamp() {
  time_t now = time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string dirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

// A crash between mkstemp and rename leaves <file>.tmp-XXXXXX behind (it
// holds tokens); the next start removes it.
void removeStaleTempFiles(const std::string& path) {
  const std::string dir = dirOf(path);
  const std::string prefix = path.substr(path.rfind('/') + 1) + ".tmp-";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    std::string stale = dir + "/" + name;
    if (unlink(stale.c_str()) == 0) SA_INFO(kPart, "removed %s, left by a crash", stale.c_str());
  }
  closedir(d);
}

}  // namespace

int64_t wallNowMs() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string encodeLeaseFile(const LeaseFileState& state) {
  json leases = json::array();
  for (const Lease& l : state.leases) {
    leases.push_back({{"job", l.job}, {"uid", l.uid}, {"slots", l.slots}, {"token", l.token.hex()},
                      {"ttl_ms", l.ttl_ms}, {"expires_at_wall_ms", l.expires_at_ms},
                      {"granted_at_wall_ms", l.granted_at_wall_ms}});
  }
  json doc = {{"format", kFormat}, {"version", kVersion}, {"saved_at_wall_ms", wallNowMs()},
              {"draining", state.draining}, {"leases", leases}};
  return doc.dump(1) + "\n";
}

Result<LeaseFileState> decodeLeaseFile(const std::string& text) {
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return corrupt("not valid JSON");
  if (!doc.is_object()) return corrupt("not a JSON object");
  auto format = doc.find("format");
  if (format == doc.end() || *format != kFormat) {
    return corrupt(std::string("\"format\" is not \"") + kFormat + "\"");
  }
  auto version = doc.find("version");
  if (version == doc.end() || !version->is_number_integer() || *version != kVersion) {
    return corrupt("unsupported \"version\" (this agent reads version " +
                   std::to_string(kVersion) + ")");
  }
  LeaseFileState state;
  auto draining = doc.find("draining");
  if (draining == doc.end() || !draining->is_boolean()) {
    return corrupt("\"draining\" is missing or not true/false");
  }
  state.draining = draining->get<bool>();
  auto leases = doc.find("leases");
  if (leases == doc.end() || !leases->is_array()) return corrupt("\"leases\" is not an array");
  std::set<std::string> jobs;
  std::unordered_set<LeaseToken> tokens;
  for (size_t i = 0; i < leases->size(); ++i) {
    std::string where = "leases[" + std::to_string(i) + "]";
    Result<Lease> l = decodeLease((*leases)[i], where);
    if (!l.ok()) return l.status();
    if (!jobs.insert(l->job).second) return corrupt(where + ": job " + l->job + " twice");
    if (!tokens.insert(l->token).second) return corrupt(where + ": token used twice");
    state.leases.push_back(std::move(*l));
  }
  return state;
}

Status writeFileAtomically(const std::string& path, const std::string& bytes) {
  std::string dir = dirOf(path);
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = mkstemp(tmp.data());  // creates mode 0600, owned by us
  if (fd < 0) return sysError("cannot create a temp file next to", path);
  auto fail = [&](const std::string& what) {
    Status st = sysError(what, tmp);
    close(fd);
    unlink(tmp.c_str());
    return st;
  };
  // mkstemp's mode is 0600 already; fchmod makes it independent of libc.
  if (fchmod(fd, 0600) != 0) return fail("cannot chmod");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write");
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) return fail("cannot fsync");
  if (close(fd) != 0) {
    fd = -1;
    Status st = sysError("cannot close", tmp);
    unlink(tmp.c_str());
    return st;
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    Status st = sysError("cannot rename " + tmp + " to", path);
    unlink(tmp.c_str());
    return st;
  }
  // The rename is durable only once the directory entry is.
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return sysError("cannot open directory", dir);
  int rc = fsync(dfd);
  close(dfd);
  if (rc != 0) return sysError("cannot fsync directory", dir);
  return Status::Ok();
}

namespace {

// The whole file, or kIoError naming it and the error (EISDIR included:
// open() succeeds on a directory, read() does not).
Result<std::string> readWholeFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sysError("cannot open", path);
  std::string text;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status st = sysError("cannot read", path);
      close(fd);
      return st;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

}  // namespace

Result<LeaseFileState> LeaseStore::load() {
  removeStaleTempFiles(path_);
  struct stat sb {};
  if (stat(path_.c_str(), &sb) != 0) {
    if (errno == ENOENT) {
      SA_INFO(kPart, "lease file %s does not exist yet: starting with no leases", path_.c_str());
      return LeaseFileState{};
    }
    return sysError("cannot stat", path_);
  }
  Result<std::string> text = readWholeFile(path_);
  if (!text.ok()) return text.status();
  Result<LeaseFileState> decoded = decodeLeaseFile(*text);
  if (decoded.ok()) return decoded;
  std::string aside = path_ + ".corrupt-" + utcStamp();
  SA_ERROR(kPart, "lease file %s is unusable (%s): starting with no leases", path_.c_str(),
           decoded.status().message().c_str());
  if (rename(path_.c_str(), aside.c_str()) != 0) {
    // Saving now would overwrite the only copy: refuse instead.
    return Status(Code::kIoError, "lease file " + path_ + " is unusable (" +
                                      decoded.status().message() + ") and cannot be moved aside to " +
                                      aside + ": " + std::strerror(errno));
  }
  SA_ERROR(kPart, "moved %s aside to %s", path_.c_str(), aside.c_str());
  return LeaseFileState{};
}

Status LeaseStore::save(const LeaseFileState& state) {
  Status st = writeFileAtomically(path_, encodeLeaseFile(state));
  if (!st.ok()) {
    save_failures_.fetch_add(1);
    SA_ERROR(kPart, "lease file not saved (leases are kept in memory): %s",
             st.message().c_str());
  }
  return st;
}

}  // namespace switchagg::agent
