// Typed config values: parsers that name the key and the problem on bad
// input, shared by every part's config table (MCA params, environment,
// TOML files, plugstack arguments, command lines).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "switchagg/common/status.h"

namespace switchagg {

// "4096", "64K", "64KiB", "4M", "1MiB", "2G" (binary units). Names `key` in errors.
Result<uint64_t> parseSize(const std::string& key, const std::string& text);
// Decimal integer within [lo, hi].
Result<int64_t> parseInt(const std::string& key, const std::string& text, int64_t lo, int64_t hi);
// 1/0, true/false, yes/no, on/off (case-insensitive).
Result<bool> parseBool(const std::string& key, const std::string& text);
// "250ms", "2s", "1.5s", "5m", "1h"; a bare number is milliseconds.
Result<int64_t> parseDurationMs(const std::string& key, const std::string& text);
// One of `choices`; the error lists them.
Result<std::string> parseChoice(const std::string& key, const std::string& text,
                                const std::vector<std::string>& choices);

// InvalidArgument "KEY: invalid value 'TEXT' (WANT)": the one wording every
// part's parsers use for a bad value.
Status invalidValue(const std::string& key, const std::string& text, const std::string& want);

// A Unix socket path: absolute and short enough for sun_path, or "" (off,
// or the default).
Status checkSocketPath(const std::string& key, const std::string& text);

// Comma-separated lists as the environment carries them (SWITCHAGG_AGENT
// and SWITCHAGG_LEASE name one entry per agent): "a,b" <-> {"a", "b"};
// "" splits to {} and empty items are kept ("a,," -> {"a", "", ""}).
std::vector<std::string> splitList(const std::string& text);
std::string joinList(const std::vector<std::string>& items);

// getenv() that treats an empty value as unset.
const char* envOrNull(const char* name);

}  // namespace switchagg
