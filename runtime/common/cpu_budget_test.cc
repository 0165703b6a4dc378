// runtime/common/cpu_budget_test.cc
#include "runtime/common/cpu_budget.h"

#include <catch2/catch.hpp>

#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace {

// A fake file-system root: files written under a fresh temporary directory.
struct FakeRoot {
  std::filesystem::path dir;
  FakeRoot() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cpu_budget_XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  ~FakeRoot() { std::filesystem::remove_all(dir); }
  void write(const std::string& path, const std::string& text) const {
    std::filesystem::create_directories((dir / path.substr(1)).parent_path());
    std::ofstream(dir / path.substr(1)) << text;
  }
  std::string root() const { return dir.string(); }
};

}  // namespace

TEST_CASE("cpu.max gives its quota in cores and max means no limit", "[cpu_budget]") {
  CHECK(hvd::parseCpuMax("150000 100000\n") == Approx(1.5));
  CHECK(hvd::parseCpuMax("200000 100000") == Approx(2.0));
  CHECK_FALSE(hvd::parseCpuMax("max 100000\n").has_value());
  CHECK_FALSE(hvd::parseCpuMax("").has_value());
  CHECK_FALSE(hvd::parseCpuMax("garbage").has_value());
  CHECK_FALSE(hvd::parseCpuMax("0 100000").has_value());
}

TEST_CASE("the cgroup directories run from this process's own up to the hierarchy's root", "[cpu_budget]") {
  auto v2 = hvd::cgroupCpuDirs("0::/user.slice/job.scope\n");
  CHECK(v2 == std::vector<std::string>{"/sys/fs/cgroup/user.slice/job.scope", "/sys/fs/cgroup/user.slice", "/sys/fs/cgroup"});
  CHECK(hvd::cgroupCpuDirs("0::/\n") == std::vector<std::string>{"/sys/fs/cgroup"});
  auto v1 = hvd::cgroupCpuDirs("4:memory:/x\n3:cpu,cpuacct:/docker/abc\n");
  CHECK(v1 == std::vector<std::string>{"/sys/fs/cgroup/cpu,cpuacct/docker/abc", "/sys/fs/cgroup/cpu,cpuacct/docker",
                                       "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu/docker/abc",
                                       "/sys/fs/cgroup/cpu/docker", "/sys/fs/cgroup/cpu"});
  CHECK(hvd::cgroupCpuDirs("4:cpuacct:/x\n").empty());
}

TEST_CASE("the tightest quota between a process's cgroup and the root applies", "[cpu_budget]") {
  FakeRoot fs;
  fs.write("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  fs.write("/sys/fs/cgroup/cpu.max", "max 100000\n");
  fs.write("/sys/fs/cgroup/kubepods/cpu.max", "max 100000\n");
  fs.write("/sys/fs/cgroup/kubepods/pod1/cpu.max", "250000 100000\n");
  fs.write("/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
  CHECK(hvd::cgroupCpuQuota(fs.root()) == Approx(2.5));
}

TEST_CASE("a v1 cgroup's cfs quota counts and -1 there means no limit", "[cpu_budget]") {
  FakeRoot fs;
  fs.write("/proc/self/cgroup", "2:cpu,cpuacct:/docker/abc\n1:memory:/docker/abc\n");
  fs.write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n");
  fs.write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  fs.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  fs.write("/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  CHECK(hvd::cgroupCpuQuota(fs.root()) == Approx(3.0));
  fs.write("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
  CHECK_FALSE(hvd::cgroupCpuQuota(fs.root()).has_value());
}

TEST_CASE("without a readable cgroup there is no quota", "[cpu_budget]") {
  FakeRoot fs;
  CHECK_FALSE(hvd::cgroupCpuQuota(fs.root()).has_value());
  fs.write("/proc/self/cgroup", "0::/a\n");
  CHECK_FALSE(hvd::cgroupCpuQuota(fs.root()).has_value());
}

TEST_CASE("the usable cores are at most the CPUs this process's affinity allows and the affinity lists them", "[cpu_budget]") {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
  int cores = hvd::usableCores();
  CHECK(cores >= 1);
  CHECK(cores <= CPU_COUNT(&set));
  // Pinned to one CPU, one core is all there is.
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) {
      CPU_SET(c, &one);
      break;
    }
  }
  CHECK(hvd::affinityCpus().size() == static_cast<size_t>(CPU_COUNT(&set)));
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
  CHECK(hvd::usableCores() == 1);
  auto pinned = hvd::affinityCpus();
  REQUIRE(pinned.size() == 1);
  CHECK(CPU_ISSET(pinned[0], &one));
  REQUIRE(::sched_setaffinity(0, sizeof set, &set) == 0);
}

TEST_CASE("the runnable count is the running half of loadavg's fourth field", "[cpu_budget]") {
  CHECK(hvd::parseRunnableTasks("0.50 0.40 0.30 3/250 12345\n") == 3);
  CHECK(hvd::parseRunnableTasks("12.00 9.10 8.00 17/1024 99\n") == 17);
  CHECK_FALSE(hvd::parseRunnableTasks("0.50 0.40").has_value());
  CHECK_FALSE(hvd::parseRunnableTasks("0.50 0.40 0.30 x/250 1").has_value());
  auto live = hvd::runnableTasks();
  REQUIRE(live.has_value());
  CHECK(*live >= 1);  // this thread, reading it
}

TEST_CASE("the cores from an affinity count already read are capped by the quota and are at least one", "[cpu_budget]") {
  CHECK(hvd::usableCores(8, std::nullopt) == 8);
  CHECK(hvd::usableCores(8, 2) == 2);
  CHECK(hvd::usableCores(2, 6) == 2);
  CHECK(hvd::usableCores(1, std::nullopt) == 1);
  // An affinity that could not be read counts the online CPUs, still under the quota.
  CHECK(hvd::usableCores(0, 1) == 1);
  CHECK(hvd::usableCores(0, std::nullopt) >= 1);
}
