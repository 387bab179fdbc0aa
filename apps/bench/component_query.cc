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

void* findSymbol(const char* name) {
  void* sym = dlsym(RTLD_DEFAULT, name);
  if (sym != nullptr) return sym;
  std::string path;
  dl_iterate_phdr(findComponent, &path);
  if (path.empty()) return nullptr;
  // RTLD_NOLOAD: only a handle on the already-loaded copy; the reference it
  // takes is dropped at exit with the process.
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  return handle != nullptr ? dlsym(handle, name) : nullptr;
}

}  // namespace

ComponentQuery::ComponentQuery() {
  fn_ = reinterpret_cast<switchagg_coll_last_algorithm_fn>(findSymbol(kSymbol));
  counter_ = reinterpret_cast<switchagg_coll_comm_counter_fn>(
      findSymbol(SWITCHAGG_COLL_COMM_COUNTER_SYMBOL));
}

int64_t ComponentQuery::bytesSent(MPI_Comm comm) const {
  if (counter_ == nullptr) return -1;
  int64_t total = 0;
  for (const char* name : {"host:bytes_sent", "switch:bytes_sent"}) {
    const uint64_t v = counter_(comm, name);
    if (v != UINT64_MAX) total += int64_t(v);
  }
  return total;
}

int64_t ComponentQuery::counter(MPI_Comm comm, const char* name) const {
  if (counter_ == nullptr) return -1;
  const uint64_t v = counter_(comm, name);
  return v == UINT64_MAX ? -1 : int64_t(v);
}

std::string ComponentQuery::lastAlgorithm(MPI_Comm comm) const {
  if (fn_ == nullptr) return "n/a";
  const char* name = fn_(comm);
  return name != nullptr ? name : "not-serving";
}

}  // namespace switchagg::bench
