// runtime/common/network_interface.cc: getifaddrs(3).
#include "runtime/common/network_interface.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>

namespace hvd {
namespace {

// Calls visit(name, address) for every IPv4 address; stops when visit returns true.
template <typename Visit>
Status forEachIpv4(Visit visit) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return systemError("getifaddrs", errno);
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr, text, sizeof text);
    if (visit(std::string(it->ifa_name), std::string(text))) break;
  }
  ::freeifaddrs(list);
  return Status::ok();
}

}  // namespace

std::vector<std::string> ipv4InterfaceNames() {
  std::vector<std::string> names;
  (void)forEachIpv4([&](const std::string& name, const std::string&) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    return false;
  });
  return names;
}

Result<std::string> interfaceAddress(const std::string& name) {
  std::string found;
  HVD_RETURN_IF_ERROR(forEachIpv4([&](const std::string& interface, const std::string& address) {
    if (interface == name) found = address;
    return !found.empty();
  }));
  if (!found.empty()) return found;
  std::string known;
  for (const std::string& n : ipv4InterfaceNames()) known += (known.empty() ? "" : ", ") + n;
  return Status(Errc::kNotFound, "network interface '" + name + "' has no IPv4 address here")
      .withHint("interfaces with one: " + (known.empty() ? std::string("none") : known));
}

}  // namespace hvd
