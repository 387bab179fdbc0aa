#include "component_query.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

namespace switchagg::bench {
namespace {

constexpr const char* kSymbol = SWITCHAGG_COLL_LAST_ALGORITHM_SYMBOL;
constexpr const char* kComponentFile = "mca_coll_switchagg.so";

// Open MPI may dlopen components with RTLD_LOCAL, which hides their symbols
// from RTLD_DEFAULT; find the loaded file by name and ask its own handle.
int findComponent(struct dl_phdr_info* info, size_t, void* data) {
  const char* name = info->dlpi_name;
  if (name == nullptr) return 0;
  const char* base = strrchr(name, '/');
  base = base ? base + 1 : name;
  if (strcmp(base, kComponentFile) != 0) return 0;
  *static_cast<std::string*>(data) = name;
  return 1;
}

}  // namespace

ComponentQuery::ComponentQuery() {
  void* sym = dlsym(RTLD_DEFAULT, kSymbol);
  if (sym == nullptr) {
    std::string path;
    dl_iterate_phdr(findComponent, &path);
    if (!path.empty()) {
      // RTLD_NOLOAD: only a handle on the already-loaded copy; the reference
      // it takes is dropped at exit with the process.
      void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
      if (handle != nullptr) sym = dlsym(handle, kSymbol);
    }
  }
  fn_ = reinterpret_cast<switchagg_coll_last_algorithm_fn>(sym);
}

std::string ComponentQuery::lastAlgorithm(MPI_Comm comm) const {
  if (fn_ == nullptr) return "n/a";
  const char* name = fn_(comm);
  return name != nullptr ? name : "not-serving";
}

}  // namespace switchagg::bench
