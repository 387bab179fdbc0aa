// switchagg-info subcommands: a tiny registry so parts can add a mode (e.g.
// `--select` from the selector) in their own source file without touching
// main.cc. A file named command_<name>.cc in this folder is built in
// automatically; a command_<name>.cmake beside it (optional) is included
// after the target exists, to link what the command needs:
//
//   // command_select.cc
//   #include "info_command.h"
//   static int runSelect(const std::vector<std::string>& args) { ... }
//   SWITCHAGG_INFO_COMMAND(select, "--select", "--select [ARGS]  show ...", runSelect);
//
//   # command_select.cmake
//   target_link_libraries(switchagg-info PRIVATE switchagg_selector)
#pragma once

#include <string>
#include <vector>

namespace switchagg::info {

struct InfoCommand {
  const char* flag;   // "--select": present anywhere on the command line
  const char* usage;  // one line for --help
  // Gets every other argument (the flag removed); returns the exit code.
  int (*run)(const std::vector<std::string>& args);
};

bool registerCommand(const InfoCommand& command);
const std::vector<InfoCommand>& registeredCommands();

}  // namespace switchagg::info

#define SWITCHAGG_INFO_COMMAND(id, flag, usage, fn)                     \
  [[maybe_unused]] static const bool switchagg_info_command_##id =      \
      ::switchagg::info::registerCommand({flag, usage, fn})
