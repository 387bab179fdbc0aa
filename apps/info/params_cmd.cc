#include "commands.h"

#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "algorithm_registry.h"
#include "switchagg/coll/coll_params.h"
#include "switchagg/coll/pmpi_params.h"

namespace switchagg::info {
namespace {

std::string quoted(const std::string& s) { return "`" + s + "`"; }

std::string listed(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) out += (out.empty() ? "" : ", ") + quoted(v);
  return out;
}

// The default column: a number or value in backquotes; "empty" for an empty
// text; an INFO row's words as they are.
std::string defaultText(const char* kind, const std::string& value) {
  if (std::strcmp(kind, "INFO") == 0) return value;
  return value.empty() ? "empty" : quoted(value);
}

// The values column, by kind.
std::string valuesText(const char* kind, long long lo, long long hi, const char* values) {
  if (std::strcmp(kind, "BOOL") == 0) return "`0`/`1`";
  if (std::strcmp(kind, "INT") == 0) {
    if (lo == INT_MIN) return "integer";
    if (hi >= (1LL << 30)) return quoted(std::to_string(lo)) + "..";
    return quoted(std::to_string(lo)) + ".." + quoted(std::to_string(hi));
  }
  if (std::strcmp(kind, "ENUM") == 0) return listed(coll::collParamValues(values));
  if (std::strcmp(kind, "ALGO") == 0) {
    std::vector<std::string> names{"auto"};
    for (const coll::AlgorithmInfo& a : coll::algorithmRegistry()) names.emplace_back(a.name);
    return listed(names);
  }
  if (std::strcmp(kind, "STRING") == 0) return values != nullptr ? values : "text";
  return "read-only";
}

template <typename T>
std::string str(T v) {
  if constexpr (std::is_arithmetic_v<T>) return std::to_string(v);
  else return std::string(v);
}

void printRows() {
  std::printf("| parameter | default | values |\n| --- | --- | --- |\n");
#define PARAMS_ROW_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, HELP)          \
  SWITCHAGG_COLL_IF_MCA_##LAYERS(std::printf(                                                    \
      "| `coll_switchagg_%s` | %s | %s |\n", #NAME, defaultText(#KIND, str(DEF)).c_str(),      \
      valuesText(#KIND, static_cast<long long>(MIN), static_cast<long long>(MAX), VALUES).c_str());)
  SWITCHAGG_COLL_PARAMS(PARAMS_ROW_)
#undef PARAMS_ROW_
}

}  // namespace

int paramsCommand(int argc, char** argv) {
  bool wanted = false;
  for (int i = 1; i < argc; ++i) wanted = wanted || std::strcmp(argv[i], "--coll-params") == 0;
  if (!wanted) return -1;
  if (argc != 2) {
    std::fprintf(stderr, "switchagg-info: --coll-params takes no other argument\n");
    return 2;
  }
  printRows();
  return 0;
}

}  // namespace switchagg::info
