// A private temp directory for a test, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <string>

namespace switchagg::testing {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/switchagg-test-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) path_ = tmpl;
  }
  ~TempDir() {
    if (path_.empty()) return;
    [[maybe_unused]] int rc = std::system(("rm -rf '" + path_ + "'").c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }  // "" if mkdtemp failed

 private:
  std::string path_;
};

}  // namespace switchagg::testing
