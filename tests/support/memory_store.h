// tests/support/memory_store.h: an in-memory Store for ranks that are threads of one test
// process (Gloo's tests do the same). Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "runtime/common/store.h"

namespace hvd::test {

class MemoryStore : public Store {
 public:
  Status set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    map_[key] = value;
    changed_.notify_all();
    return Status::ok();
  }
  Result<std::string> get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, timeout, [&] { return map_.count(key) > 0; })) return Status(Errc::kTimeout, key);
    return map_[key];
  }
  Result<long long> add(const std::string& key, long long delta) override {
    std::lock_guard<std::mutex> lock(mutex_);
    long long value = (map_.count(key) ? std::stoll(map_[key]) : 0) + delta;
    map_[key] = std::to_string(value);
    changed_.notify_all();
    return value;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> map_;
};

}  // namespace hvd::test
