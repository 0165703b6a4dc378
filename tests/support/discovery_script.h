// tests/support/discovery_script.h: a --host-discovery-script for elastic tests. It prints
// the file DISCOVERY_FILE names, which starts with `hosts`; a test rank rewrites that file
// (collective_rank's elastic-grow writes DISCOVERY_GROWN into it) to change the answer.
#pragma once

#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/support/hvdrun_runner.h"

namespace hvd::test {

class DiscoveryScript {
 public:
  explicit DiscoveryScript(const std::string& hosts)
      : script_(dir_.path() + "/discover.sh"), hostsFile_(dir_.path() + "/hosts") {
    std::ofstream(script_) << "#!/bin/sh\ncat \"$DISCOVERY_FILE\"\n";
    std::ofstream(hostsFile_) << hosts;
    ::chmod(script_.c_str(), 0755);
  }
  const std::string& path() const { return script_; }
  std::string fileVariable() const { return "DISCOVERY_FILE=" + hostsFile_; }  // for the ranks' environment
  std::string inDir(const std::string& name) const { return dir_.path() + "/" + name; }  // a scratch path

 private:
  TempDir dir_;
  std::string script_, hostsFile_;
};

}  // namespace hvd::test
