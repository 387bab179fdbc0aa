#include "toml_text.h"

#include <cstring>
#include <sstream>

namespace switchagg::agent {

namespace {

// toml++ 3.3 (Debian 12) runs into __builtin_unreachable (undefined
// behaviour) when its whitespace test meets certain non-ASCII code points
// (e.g. U+00A1, U+FEFE: three bytes of text were enough, found by
// fuzz_agent_config and fuzz_fabric_map). It only tests characters outside
// strings and comments, where TOML allows no non-ASCII anyway (a quote in
// the middle of a bare token included: toml++ reads on as the token), and
// right after a multi-line basic string's backslash. So non-ASCII there is
// refused here, before toml++ sees it; in strings and comments it stays
// allowed (a quoted key after a value's '=' inside an inline table is taken
// as a token: refused too, the safe side). Returns "" or "line:col: what".
std::string unsafeNonAscii(const std::string& text) {
  enum class In { kTop, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };
  In in = In::kTop;
  size_t line = 1, line_start = 0;
  size_t depth = 0;  // open '[' and '{' outside strings
  bool value = false;  // past this line's key/value separator
  bool token = false;  // in a value's bare token
  auto where = [&](size_t i, const char* what) {
    return std::to_string(line) + ":" + std::to_string(i - line_start + 1) + ": " + what;
  };
  auto at = [&](size_t i, const char* s) { return text.compare(i, 3, s) == 0; };
  size_t i = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 BOM
  line_start = i;  // the first line starts after it (a quote there opens a key)
  for (; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      if (in == In::kComment || in == In::kBasic || in == In::kLiteral) in = In::kTop;
      token = false;
      if (depth == 0) value = false;  // an array or inline table goes on
      continue;
    }
    switch (in) {
      case In::kTop: {
        if (c >= 0x80) return where(i, "a non-ASCII character outside a string or comment");
        if (c == '#') {
          in = In::kComment;
          break;
        }
        bool quote = c == '"' || c == '\'';
        bool opens;
        if (!value) {
          // A key (or a table header): a quote opens a quoted key after
          // whitespace, '[', '{', ',' or a dot.
          char before = i == line_start ? '\n' : text[i - 1];
          opens = before != 0 && std::strchr(" \t\n[{,.", before) != nullptr;
          if (c == '[' || c == '{') ++depth;
          if ((c == ']' || c == '}') && depth > 0) --depth;
          if (c == '=' && depth == 0) {
            value = true;  // the key/value separator: a value follows
            token = false;
          }
        } else {
          // A value: toml++ reads a bare token (number, date, bool, or junk)
          // up to whitespace, ']', '}', ',' or '#', quotes and brackets
          // included (1="x", 2."x", 0x0["x"): a quote opens a string only
          // where no token runs.
          opens = !token;
          if (c == ' ' || c == '\t' || c == '\r' || c == ',' || c == ']' || c == '}') {
            token = false;
            if ((c == ']' || c == '}') && depth > 0) --depth;
          } else if ((c == '[' || c == '{') && !token) {
            ++depth;
          } else if (!quote) {
            token = true;
          }
        }
        if (quote && !opens) token = true;
        if (opens && c == '"') in = at(i, "\"\"\"") ? (i += 2, In::kMultiBasic) : In::kBasic;
        if (opens && c == '\'') in = at(i, "'''") ? (i += 2, In::kMultiLiteral) : In::kLiteral;
        break;
      }
      case In::kComment: break;
      case In::kBasic:
        if (c == '\\') ++i;  // the escaped byte (not a newline: that ends the line above)
        else if (c == '"') in = In::kTop;
        break;
      case In::kLiteral:
        if (c == '\'') in = In::kTop;
        break;
      case In::kMultiBasic:
        if (c == '\\') {
          size_t j = i + 1;
          if (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x80)
            return where(j, "a non-ASCII character after a backslash");
          // A line-ending backslash: whitespace and newlines are skipped.
          bool skips = j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' ||
                                           text[j] == '\n');
          if (!skips) {
            ++i;
            break;
          }
          for (; j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r' ||
                                     text[j] == '\n');
               ++j) {
            if (text[j] == '\n') {
              ++line;
              line_start = j + 1;
            }
          }
          if (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x80)
            return where(j, "a non-ASCII character after a line-ending backslash");
          i = j - 1;
        } else if (at(i, "\"\"\"")) {
          i += 2;
          while (i + 1 < text.size() && text[i + 1] == '"') ++i;  // up to two quotes of content
          in = In::kTop;
        }
        break;
      case In::kMultiLiteral:
        if (at(i, "'''")) {
          i += 2;
          while (i + 1 < text.size() && text[i + 1] == '\'') ++i;
          in = In::kTop;
        }
        break;
    }
  }
  return "";
}

}  // namespace

Result<toml::table> parseTomlText(const std::string& text, const std::string& origin) {
  if (std::string bad = unsafeNonAscii(text); !bad.empty())
    return Status(Code::kInvalidArgument, origin + ":" + bad);
  try {
    return toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << origin << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
        << e.description();
    return Status(Code::kInvalidArgument, msg.str());
  }
}

}  // namespace switchagg::agent
