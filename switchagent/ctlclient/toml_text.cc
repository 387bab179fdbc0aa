#include "toml_text.h"

#include <sstream>

namespace switchagg::agent {

Result<toml::table> parseTomlText(const std::string& text, const std::string& origin) {
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
