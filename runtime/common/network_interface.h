// runtime/common/network_interface.h: which address a named interface (eth0, ib0) has, so
// ranks can be told to talk over a chosen network (--network-interface).
#pragma once

#include <string>
#include <vector>

#include "runtime/common/status.h"

namespace hvd {

// The interface's first IPv4 address, as text. kNotFound names the interface and lists
// the ones this host has (with an IPv4 address).
Result<std::string> interfaceAddress(const std::string& name);

// Interfaces with an IPv4 address, in the kernel's order, without duplicates.
std::vector<std::string> ipv4InterfaceNames();

}  // namespace hvd
