// runtime/common/dynamic_library.cc: dlopen/dlsym behind DynamicLibrary.
#include "runtime/common/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

namespace hvd {

void DynamicLibrary::Closer::operator()(void* handle) const {
  if (handle != nullptr) dlclose(handle);
}

Result<DynamicLibrary> DynamicLibrary::open(const std::vector<std::string>& candidates) {
  std::string reasons;
  for (const std::string& name : candidates) {
    // RTLD_LOCAL keeps a probed library's symbols from interposing on anything else.
    void* handle = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      if (!reasons.empty()) reasons += "; ";
      reasons += why != nullptr ? why : name + ": cannot be loaded";
      continue;
    }
    DynamicLibrary lib;
    lib.handle_.reset(handle);
    lib.path_ = name;
    const link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      lib.path_ = map->l_name;
    }
    return lib;
  }
  if (candidates.empty()) return notFound("no library name to load");
  return notFound(reasons);
}

void* DynamicLibrary::symbol(const char* name) const {
  if (!handle_) return nullptr;
  return dlsym(handle_.get(), name);
}

}  // namespace hvd
