// cli/plan/host_name.cc: RFC 1123 host names, with '_' allowed (cluster /etc/hosts use it).
#include "cli/plan/host_name.h"

#include <cstdio>
#include <string>

namespace hvd::cli {
namespace {

bool isLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

std::string shown(char c) {
  if (c >= 0x21 && c <= 0x7e) return "'" + std::string(1, c) + "'";
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned char>(c));
  return std::string("byte ") + buf;
}

}  // namespace

Status checkHostName(std::string_view host) {
  if (host.empty()) return invalidArgument("an empty host name");
  if (host.size() > kMaxHostNameLength + 1 || (host.size() > kMaxHostNameLength && host.back() != '.')) {
    return invalidArgument("a host name of " + std::to_string(host.size()) + " characters (at most " +
                           std::to_string(kMaxHostNameLength) + ")");
  }
  std::string_view name = host.back() == '.' ? host.substr(0, host.size() - 1) : host;
  if (name.empty()) return invalidArgument("'.' is not a host name");
  if (name.front() == '-') {
    return invalidArgument("host '" + std::string(host) + "' starts with '-' (it would read as an option)");
  }
  size_t labelStart = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      size_t length = i - labelStart;
      if (length == 0) return invalidArgument("host '" + std::string(host) + "' has an empty part between dots");
      if (length > kMaxHostLabelLength) {
        return invalidArgument("host '" + std::string(host.substr(0, 40)) + "...' has a part of " + std::to_string(length) +
                               " characters between dots (at most " + std::to_string(kMaxHostLabelLength) + ")");
      }
      labelStart = i + 1;
      continue;
    }
    if (!isLabelChar(name[i])) {
      std::string hint = name[i] == ':' ? " (IPv6 addresses are not taken here: give the host's name; a slot count "
                                          "follows one ':', as in 'node1:4')"
                                        : "";
      return invalidArgument("host '" + std::string(host) + "' holds " + shown(name[i]) +
                             ", which no host name has (letters, digits, '-', '_' and '.')" + hint);
    }
  }
  return Status::ok();
}

}  // namespace hvd::cli
