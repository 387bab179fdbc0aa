// switchagg-info: what this host gives switchagg's transport — RDMA devices,
// the resolved RoCEv2 profile, the UCX settings applied or left to the user,
// and the transport options. Other modes live in their own files and are
// dispatched first, one marked line each (see "Other modes" below).
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"  // --select, --fabric, --coll-params
#include "info_report.h"

namespace {

using switchagg::info::InfoArgs;

void printUsage(FILE* out) {
  std::fprintf(out,
               "usage: switchagg-info [--json] [--sysfs-root DIR] [--device DEV[:PORT]] "
               "[--netdev IF]\n"
               "  --json             machine-readable output\n"
               "  --sysfs-root DIR   resolve GIDs from DIR instead of /sys/class/infiniband\n"
               "  --device DEV[:P]   only this RDMA device (and port)\n"
               "  --netdev IF        prefer GIDs on this netdev\n"
               "  --help             this text\n");
  std::fprintf(out,
               "Options are also read from SWITCHAGG_* variables (every one is listed, with its "
               "value, in the output's options table; a bad value is an error naming it); the "
               "command line wins.\n\n%s\n%s\n%s",
               switchagg::info::selectUsage().c_str(), switchagg::info::fabricUsage().c_str(),
               switchagg::info::kParamsUsage);
}

// Accepts "--flag VALUE" and "--flag=VALUE". Returns false on a usage error.
bool takeValue(const std::vector<std::string>& args, size_t* i, const std::string& flag,
               std::optional<std::string>* out, bool* matched) {
  const std::string& a = args[*i];
  *matched = false;
  if (a == flag) {
    *matched = true;
    if (*i + 1 >= args.size()) return false;
    *out = args[++*i];
    return true;
  }
  if (a.rfind(flag + "=", 0) == 0) {
    *matched = true;
    *out = a.substr(flag.size() + 1);
  }
  return true;
}

// 0 = parsed, 1 = --help shown, 2 = usage error (printed).
int parseArgs(const std::vector<std::string>& args, InfoArgs* out) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      printUsage(stdout);
      return 1;
    }
    if (args[i] == "--json") {
      out->json = true;
      continue;
    }
    bool matched = false;
    const std::pair<const char*, std::optional<std::string>*> valued[] = {
        {"--sysfs-root", &out->sysfs_root}, {"--device", &out->device}, {"--netdev", &out->netdev}};
    for (const auto& [flag, dest] : valued) {
      if (!takeValue(args, &i, flag, dest, &matched)) {
        std::fprintf(stderr, "switchagg-info: %s needs a value\n", flag);
        return 2;
      }
      if (matched) break;
    }
    if (matched) continue;
    std::fprintf(stderr, "switchagg-info: unknown argument '%s' (see --help)\n", args[i].c_str());
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Other modes: each owns its arguments; one line per mode here.
  if (switchagg::info::wantsSelectCommand(argc, argv))
    return switchagg::info::runSelectCommand(argc, argv);
  if (switchagg::info::wantsFabricCommand(argc, argv))
    return switchagg::info::runFabricCommand(argc, argv);
  if (const int rc = switchagg::info::paramsCommand(argc, argv); rc >= 0) return rc;

  std::vector<std::string> args(argv + 1, argv + argc);
  InfoArgs info_args;
  const int parsed = parseArgs(args, &info_args);
  if (parsed != 0) return parsed == 1 ? 0 : 2;
  auto report = switchagg::info::buildReport(info_args);
  if (!report.ok()) {
    std::fprintf(stderr, "switchagg-info: %s\n", report.status().toString().c_str());
    return report.status().code() == switchagg::Code::kInvalidArgument ? 2 : 1;
  }
  const std::string text =
      info_args.json ? switchagg::info::renderJson(*report) : switchagg::info::renderText(*report);
  std::fputs(text.c_str(), stdout);
  return 0;
}
