// The PMPI library's parameters (libswitchagg_pmpi.so, mpi_coll/pmpi): the
// Open MPI component's MCA parameters under the same names, read from the
// environment instead (coll_switchagg_offload <- SWITCHAGG_OFFLOAD, ...).
// Made from the coll parameter table (switchagg/coll/coll_params.h): its rows
// of the PMPI layer give PmpiParams' fields and defaults and the table's
// names, variables, help and parsers. switchagg-info lists them.
#pragma once

#include <string>
#include <vector>

#include "switchagg/coll/coll_params.h"
#include "switchagg/common/config_table.h"

namespace switchagg::coll {

// One field per row of the PMPI layer, named as the parameter.
#define SWITCHAGG_PMPI_FIELD_BOOL(NAME) bool NAME = switchagg_coll_default_##NAME() != 0;
#define SWITCHAGG_PMPI_FIELD_INT(NAME) int NAME = switchagg_coll_default_##NAME();
#define SWITCHAGG_PMPI_FIELD_STRING(NAME) std::string NAME = switchagg_coll_default_##NAME();
#define SWITCHAGG_PMPI_FIELD_ENUM SWITCHAGG_PMPI_FIELD_STRING
#define SWITCHAGG_PMPI_FIELD_ALGO SWITCHAGG_PMPI_FIELD_STRING
#define SWITCHAGG_PMPI_FIELD_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, HELP) \
  SWITCHAGG_COLL_IF_PMPI_##LAYERS(SWITCHAGG_PMPI_FIELD_##KIND(NAME))
struct PmpiParams {
  SWITCHAGG_COLL_PARAMS(SWITCHAGG_PMPI_FIELD_)
};
#undef SWITCHAGG_PMPI_FIELD_

// "a|b|c" -> {"a", "b", "c"}: an ENUM row's values.
inline std::vector<std::string> collParamValues(const char* values) {
  std::vector<std::string> out(1);
  for (const char* c = values; *c != '\0'; ++c) {
    if (*c == '|') out.emplace_back();
    else out.back() += *c;
  }
  return out;
}

// A row's parser: an ALGO is checked by the core when it opens (parsePolicy).
#define SWITCHAGG_PMPI_BIND_BOOL(NAME, MIN, MAX, VALUES) boolField(&PmpiParams::NAME)
#define SWITCHAGG_PMPI_BIND_INT(NAME, MIN, MAX, VALUES) intField(&PmpiParams::NAME, MIN, MAX)
#define SWITCHAGG_PMPI_BIND_STRING(NAME, MIN, MAX, VALUES) stringField(&PmpiParams::NAME)
#define SWITCHAGG_PMPI_BIND_ALGO SWITCHAGG_PMPI_BIND_STRING
#define SWITCHAGG_PMPI_BIND_ENUM(NAME, MIN, MAX, VALUES) \
  nameField(&PmpiParams::NAME, collParamValues(VALUES))
// The help of a row both glues share says which library reads it.
#define SWITCHAGG_PMPI_HELP_ALL(HELP) "PMPI library: " HELP
#define SWITCHAGG_PMPI_HELP_MCA_PMPI(HELP) "PMPI library: " HELP
#define SWITCHAGG_PMPI_HELP_PMPI(HELP) HELP
#define SWITCHAGG_PMPI_KEY_(NAME, KIND, DEF, MIN, MAX, VALUES, LAYERS, LEVEL, SCOPE, ENV, HELP) \
  SWITCHAGG_COLL_IF_PMPI_##LAYERS(                                                            \
      {"coll_switchagg_" #NAME, ENV, SWITCHAGG_PMPI_HELP_##LAYERS(HELP),                     \
       SWITCHAGG_PMPI_BIND_##KIND(NAME, MIN, MAX, VALUES)}, )

inline const ConfigTable<PmpiParams>& pmpiParamsTable() {
  static const ConfigTable<PmpiParams> t({SWITCHAGG_COLL_PARAMS(SWITCHAGG_PMPI_KEY_)});
  return t;
}
#undef SWITCHAGG_PMPI_KEY_

}  // namespace switchagg::coll
