#include "lease_note.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace switchagg::spank {
namespace {

Status ioError(const std::string& what) {
  return Status(Code::kIoError, what + ": " + std::strerror(errno));
}

bool writeAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// One line each; a newline inside would split the note.
std::string oneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

std::string notePath(const std::string& state_dir, uint32_t job) {
  return state_dir + "/job-" + std::to_string(job) + ".reason";
}

Status writeNote(const std::string& state_dir, uint32_t job, uid_t uid, gid_t gid,
                 const LeaseNote& note) {
  if (::mkdir(state_dir.c_str(), 0755) != 0 && errno != EEXIST) return ioError("mkdir " + state_dir);
  const std::string path = notePath(state_dir, job);
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ioError("create " + tmp);
  bool ok = writeAll(fd, oneLine(note.error) + "\n" + oneLine(note.text) + "\n");
  ok = ok && ::fchown(fd, uid, gid) == 0;
  int saved = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) saved = errno;
    ::unlink(tmp.c_str());
    errno = saved;
    return ioError("write " + path);
  }
  return Status::Ok();
}

LeaseNote readNote(const std::string& state_dir, uint32_t job) {
  LeaseNote note;
  int fd = ::open(notePath(state_dir, job).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return note;
  char buf[2048];
  ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return note;
  std::string data(buf, static_cast<size_t>(n));
  size_t nl = data.find('\n');
  if (nl == std::string::npos) return note;
  note.error = data.substr(0, nl);
  size_t end = data.find('\n', nl + 1);
  note.text = data.substr(nl + 1, end == std::string::npos ? std::string::npos : end - nl - 1);
  return note;
}

void removeNote(const std::string& state_dir, uint32_t job) {
  ::unlink(notePath(state_dir, job).c_str());
}

}  // namespace switchagg::spank
