// A private temp directory for a test, removed with everything in it when
// the TempDir goes (SWITCHAGG_TEST_KEEP=1 keeps it for a post-mortem).
// Shared by the parts' tests (target switchagg_test_support).
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace switchagg::testing {

class TempDir {
 public:
  // /tmp/switchagg-<what>-XXXXXX, mode 0700 (mkdtemp's); `mode` 0755 lets
  // other uids in (tests that run programs as another user, munged's socket).
  explicit TempDir(const std::string& what = "test", mode_t mode = 0700) {
    std::string tmpl = "/tmp/switchagg-" + what + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return;
    path_ = tmpl;
    if (mode != 0700) chmod(path_.c_str(), mode);
  }
  ~TempDir() {
    if (path_.empty() || std::getenv("SWITCHAGG_TEST_KEEP") != nullptr) return;
    if (std::system(("rm -rf '" + path_ + "'").c_str()) != 0)
      std::fprintf(stderr, "could not remove %s\n", path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }  // "" if mkdtemp failed

 private:
  std::string path_;
};

}  // namespace switchagg::testing
