// runtime/backends/pmix/pmix_job.cc: PMIx through dlopen (ranks must start on machines
// without libpmix), its types from the headers. A get() after any set() first runs a PMIx
// fence that collects every rank's published values. The fence is collective, so every
// rank must make the same sequence of set() and get() calls: the runtime does (secret,
// then ring addresses), and so all values published before a read are visible to it.
#include <pmix.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/backends/launcher_job.h"
#include "runtime/common/dynamic_library.h"

namespace hvd::backends::pmix {
namespace {

struct Api {
  DynamicLibrary library;
  decltype(&PMIx_Init) init = nullptr;
  decltype(&PMIx_Put) put = nullptr;
  decltype(&PMIx_Commit) commit = nullptr;
  decltype(&PMIx_Fence) fence = nullptr;
  decltype(&PMIx_Get) get = nullptr;
  decltype(&PMIx_Value_destruct) destruct = nullptr;
  decltype(&PMIx_Error_string) errorString = nullptr;
  decltype(&PMIx_Finalize) finalize = nullptr;
};

Result<std::shared_ptr<Api>> loadApi() {
  auto lib = DynamicLibrary::open({"libpmix.so.2", "libpmix.so", HVD_PMIX_LIBRARY});
  if (!lib) return Status(Errc::kUnavailable, "the PMIx library cannot be loaded: " + lib.status().message());
  auto api = std::make_shared<Api>(Api{std::move(*lib)});
  api->init = api->library.function<decltype(&PMIx_Init)>("PMIx_Init");
  api->put = api->library.function<decltype(&PMIx_Put)>("PMIx_Put");
  api->commit = api->library.function<decltype(&PMIx_Commit)>("PMIx_Commit");
  api->fence = api->library.function<decltype(&PMIx_Fence)>("PMIx_Fence");
  api->get = api->library.function<decltype(&PMIx_Get)>("PMIx_Get");
  api->destruct = api->library.function<decltype(&PMIx_Value_destruct)>("PMIx_Value_destruct");
  api->errorString = api->library.function<decltype(&PMIx_Error_string)>("PMIx_Error_string");
  api->finalize = api->library.function<decltype(&PMIx_Finalize)>("PMIx_Finalize");
  if (!api->finalize || !api->init || !api->put || !api->commit || !api->fence || !api->get || !api->destruct || !api->errorString) {
    return Status(Errc::kUnavailable, api->library.path() + " lacks PMIx client functions");
  }
  return api;
}

Status failed(const Api& api, const std::string& call, pmix_status_t rc) {
  return Status(Errc::kRemote, call + " failed: " + api.errorString(rc));
}

// A value PMIx returned, released on scope exit.
struct Value {
  const Api& api;
  pmix_value_t* value = nullptr;
  ~Value() {
    if (value != nullptr) {
      api.destruct(value);
      std::free(value);
    }
  }
};

std::optional<long long> integerOf(const pmix_value_t& v) {
  switch (v.type) {
    case PMIX_UINT8: return v.data.uint8;
    case PMIX_UINT16: return v.data.uint16;
    case PMIX_UINT32: return v.data.uint32;
    case PMIX_UINT64: return static_cast<long long>(v.data.uint64);
    case PMIX_INT: return v.data.integer;
    case PMIX_INT32: return v.data.int32;
    case PMIX_INT64: return v.data.int64;
    case PMIX_SIZE: return static_cast<long long>(v.data.size);
    default: return std::nullopt;
  }
}

class PmixStore : public Store {
 public:
  PmixStore(std::shared_ptr<Api> api, pmix_proc_t self, std::chrono::milliseconds timeout)
      : api_(std::move(api)), self_(self), timeout_(timeout) {}

  // Thread-compatible: one thread builds the communicator.
  Status set(const std::string& key, const std::string& value) override {
    pmix_value_t v{};
    v.type = PMIX_STRING;
    v.data.string = const_cast<char*>(value.c_str());  // PMIx copies it
    if (pmix_status_t rc = api_->put(PMIX_GLOBAL, key.c_str(), &v); rc != PMIX_SUCCESS) return failed(*api_, "PMIx_Put", rc);
    if (pmix_status_t rc = api_->commit(); rc != PMIX_SUCCESS) return failed(*api_, "PMIx_Commit", rc);
    unfenced_ = true;
    return Status::ok();
  }

  Result<std::string> get(const std::string& key, std::chrono::milliseconds) override {
    HVD_RETURN_IF_ERROR(fenceIfNeeded());
    size_t slash = key.rfind('/');
    pmix_proc_t from = self_;
    from.rank = slash == std::string::npos ? 0 : static_cast<pmix_rank_t>(std::strtoul(key.c_str() + slash + 1, nullptr, 10));
    Value v{*api_};
    if (pmix_status_t rc = api_->get(&from, key.c_str(), nullptr, 0, &v.value); rc != PMIX_SUCCESS) {
      return failed(*api_, "PMIx_Get(" + key + " from rank " + std::to_string(from.rank) + ")", rc);
    }
    if (v.value == nullptr || v.value->type != PMIX_STRING || v.value->data.string == nullptr) {
      return Status(Errc::kRemote, "PMIx_Get(" + key + ") returned no string");
    }
    return std::string(v.value->data.string);
  }

 private:
  Status fenceIfNeeded() {
    if (!unfenced_) return Status::ok();
    pmix_proc_t all = self_;
    all.rank = PMIX_RANK_WILDCARD;
    pmix_info_t info[2]{};
    std::strncpy(info[0].key, PMIX_COLLECT_DATA, PMIX_MAX_KEYLEN);
    info[0].value.type = PMIX_BOOL;
    info[0].value.data.flag = true;
    std::strncpy(info[1].key, PMIX_TIMEOUT, PMIX_MAX_KEYLEN);
    info[1].value.type = PMIX_INT;
    info[1].value.data.integer = static_cast<int>(std::max<long long>(1, timeout_.count() / 1000));
    if (pmix_status_t rc = api_->fence(&all, 1, info, 2); rc != PMIX_SUCCESS) {
      return failed(*api_, "PMIx_Fence (exchanging ring addresses)", rc);
    }
    unfenced_ = false;
    return Status::ok();
  }

  std::shared_ptr<Api> api_;
  pmix_proc_t self_;
  std::chrono::milliseconds timeout_;
  bool unfenced_ = false;  // a set() since the last fence
};

Result<long long> jobValue(const Api& api, const pmix_proc_t& proc, const char* key, const char* what) {
  Value v{api};
  if (pmix_status_t rc = api.get(&proc, key, nullptr, 0, &v.value); rc != PMIX_SUCCESS) {
    return failed(api, std::string("PMIx_Get(") + what + ")", rc);
  }
  auto n = v.value != nullptr ? integerOf(*v.value) : std::nullopt;
  if (!n) return Status(Errc::kRemote, std::string("PMIx_Get(") + what + ") is not a number");
  return *n;
}

}  // namespace

Result<LauncherJob> joinJob(std::chrono::milliseconds timeout) {
  auto api = loadApi();
  if (!api) return api.status();
  // PMIx runs threads once initialised: its library must stay loaded for the process's life.
  static std::shared_ptr<Api> keepLoaded;
  keepLoaded = *api;
  pmix_proc_t self{};
  if (pmix_status_t rc = (*api)->init(&self, nullptr, 0); rc != PMIX_SUCCESS) {
    return Status(Errc::kUnavailable, std::string("PMIx_Init failed: ") + (*api)->errorString(rc));
  }
  pmix_proc_t job = self;
  job.rank = PMIX_RANK_WILDCARD;
  LauncherJob j;
  j.rank = static_cast<int>(self.rank);
  j.launcher = std::string("PMIx (namespace ") + self.nspace + ")";
  auto size = jobValue(**api, job, PMIX_JOB_SIZE, "job size");
  if (!size) return size.status();
  j.size = static_cast<int>(*size);
  j.store = std::make_unique<PmixStore>(*api, self, timeout);
  std::shared_ptr<Api> finalizeWith = *api;
  j.session = std::shared_ptr<void>(nullptr, [finalizeWith](void*) { finalizeWith->finalize(nullptr, 0); });
  return j;
}

}  // namespace hvd::backends::pmix
