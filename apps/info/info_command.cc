#include "info_command.h"

namespace switchagg::info {
namespace {

// Function-local so registration from other files' static initialisers is
// safe whatever the initialisation order.
std::vector<InfoCommand>& registry() {
  static std::vector<InfoCommand> commands;
  return commands;
}

}  // namespace

bool registerCommand(const InfoCommand& command) {
  registry().push_back(command);
  return true;
}

const std::vector<InfoCommand>& registeredCommands() { return registry(); }

}  // namespace switchagg::info
