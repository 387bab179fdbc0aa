// No switch path is built in yet (issue 5 replaces this factory): the
// `switch` candidate is never available and selection skips it.
#include "switch_path.h"

namespace switchagg::coll {

std::unique_ptr<SwitchPath> createSwitchPath(CommState& /*comm*/) { return nullptr; }

}  // namespace switchagg::coll
