#include "switchagg/common/config.h"
#include "switchagg/common/config_table.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <strings.h>

namespace switchagg {

Status invalidValue(const std::string& key, const std::string& text, const std::string& want) {
  return Status(Code::kInvalidArgument, key + ": invalid value '" + text + "' (" + want + ")");
}

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

}  // namespace

Result<uint64_t> parseSize(const std::string& key, const std::string& raw) {
  const std::string text = trim(raw);
  const char* want = "expected a byte size such as 4096, 64K, 64KiB, 4M or 1G";
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return invalidValue(key, raw, want);
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return invalidValue(key, raw, want);
  std::string unit = end;
  uint64_t mult = 1;
  if (unit.empty() || strcasecmp(unit.c_str(), "b") == 0) mult = 1;
  else if (strcasecmp(unit.c_str(), "k") == 0 || strcasecmp(unit.c_str(), "kib") == 0 ||
           strcasecmp(unit.c_str(), "kb") == 0) mult = 1ull << 10;
  else if (strcasecmp(unit.c_str(), "m") == 0 || strcasecmp(unit.c_str(), "mib") == 0 ||
           strcasecmp(unit.c_str(), "mb") == 0) mult = 1ull << 20;
  else if (strcasecmp(unit.c_str(), "g") == 0 || strcasecmp(unit.c_str(), "gib") == 0 ||
           strcasecmp(unit.c_str(), "gb") == 0) mult = 1ull << 30;
  else return invalidValue(key, raw, want);
  if (v > UINT64_MAX / mult) return invalidValue(key, raw, "too large");
  return static_cast<uint64_t>(v * mult);
}

Result<int64_t> parseInt(const std::string& key, const std::string& raw, int64_t lo, int64_t hi) {
  const std::string text = trim(raw);
  const std::string want = "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (text.empty()) return invalidValue(key, raw, want);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return invalidValue(key, raw, want);
  return static_cast<int64_t>(v);
}

Result<bool> parseBool(const std::string& key, const std::string& raw) {
  const std::string t = trim(raw);
  const char* s = t.c_str();
  if (!strcasecmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
    return true;
  if (!strcasecmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
    return false;
  return invalidValue(key, raw, "expected true/false, yes/no, on/off or 1/0");
}

Result<int64_t> parseDurationMs(const std::string& key, const std::string& raw) {
  const std::string text = trim(raw);
  const char* want = "expected a duration such as 250ms, 2s, 1.5s, 5m or 1h";
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.'))
    return invalidValue(key, raw, want);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || !std::isfinite(v) || v < 0) return invalidValue(key, raw, want);
  std::string unit = end;
  double mult;
  if (unit.empty() || unit == "ms") mult = 1;
  else if (unit == "s") mult = 1000;
  else if (unit == "m" || unit == "min") mult = 60000;
  else if (unit == "h") mult = 3600000;
  else return invalidValue(key, raw, want);
  double ms = v * mult;
  if (ms > 9.0e15) return invalidValue(key, raw, "too large");
  return static_cast<int64_t>(std::llround(ms));
}

Result<std::string> parseChoice(const std::string& key, const std::string& raw,
                                const std::vector<std::string>& choices) {
  const std::string text = trim(raw);
  std::string list;
  for (const auto& c : choices) {
    if (c == text) return c;
    list += list.empty() ? c : "|" + c;
  }
  return invalidValue(key, raw, "valid values: " + list);
}

Status checkSocketPath(const std::string& key, const std::string& text) {
  if (!text.empty() && text[0] != '/') {
    return invalidValue(key, text, "expected an absolute path, or \"\" to disable");
  }
  if (text.size() > 100) return invalidValue(key, text, "longer than a Unix socket path may be");
  return Status::Ok();
}

const char* envOrNull(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

std::string formatSize(uint64_t v) {
  if (v != 0 && v % (1ull << 30) == 0) return std::to_string(v >> 30) + "G";
  if (v != 0 && v % (1ull << 20) == 0) return std::to_string(v >> 20) + "M";
  if (v != 0 && v % (1ull << 10) == 0) return std::to_string(v >> 10) + "K";
  return std::to_string(v);
}

std::string formatDurationMs(int64_t v) {
  if (v == 0) return "0";
  if (v != 0 && v % 3600000 == 0) return std::to_string(v / 3600000) + "h";
  if (v > 60000 && v % 60000 == 0) return std::to_string(v / 60000) + "m";  // 60000: "60s"
  if (v != 0 && v % 1000 == 0) return std::to_string(v / 1000) + "s";
  return std::to_string(v) + "ms";
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    out.push_back(
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string joinList(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
  return out;
}

}  // namespace switchagg
