#include "runtime/common/shm_names.h"

#include <dirent.h>
#include <sys/mman.h>

#include <memory>

#include "runtime/common/hex.h"
#include "runtime/common/hmac.h"

namespace hvd {

std::string shmJobPrefix(std::string_view secret) {
  HmacDigest tag = hmacSha256(secret, "hvd-shm-job-v1");
  return "hvd-" + toHex(tag.data(), 8) + "-";
}

int removeShmObjects(std::string_view prefix) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/dev/shm"), ::closedir);
  if (!dir || prefix.empty()) return 0;
  int removed = 0;
  while (dirent* entry = ::readdir(dir.get())) {
    std::string_view name = entry->d_name;
    if (name.substr(0, prefix.size()) != prefix) continue;
    if (::shm_unlink(("/" + std::string(name)).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace hvd
