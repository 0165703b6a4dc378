// tests/e2e/check_build_e2e_test.cc: --check-build keeps horovodrun's layout and tells the
// truth: every [X] is something this test can see working, and what it cannot see is [ ].
#include <catch2/catch.hpp>
#include <unistd.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/support/hvdrun_runner.h"

using hvd::test::environmentWith;
using hvd::test::runHvdrun;
using hvd::test::withEnv;
using hvd::test::withTimeout;

namespace {

struct Item {
  bool available;
  std::string detail;
};
using Report = std::map<std::string, std::map<std::string, Item>>;

// Parses the report strictly: any line out of the documented layout fails the test.
Report parseReport(const std::string& text, bool verbose) {
  std::istringstream in(text);
  std::string line;
  REQUIRE(std::getline(in, line));
  REQUIRE(std::regex_match(line, std::regex(R"(hvdrun v\d+\.\d+\.\d+:)")));
  Report report;
  std::string section;
  bool expectSection = false;
  std::regex itemRe(verbose ? R"(    \[([X ])\] ([A-Za-z0-9().\- ]+?)(: (.*))?)" : R"(    \[([X ])\] ([A-Za-z0-9().\- ]+))");
  bool noteAllowed = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.empty()) {
      expectSection = true;
    } else if (expectSection) {
      REQUIRE(line.back() == ':');
      section = line.substr(0, line.size() - 1);
      expectSection = false;
      noteAllowed = verbose;
    } else if (noteAllowed && line.rfind("    (", 0) == 0 && line.back() == ')') {
      report[section]["(note)"] = {false, line.substr(5, line.size() - 6)};
      noteAllowed = false;
    } else {
      noteAllowed = false;
      INFO(line);
      REQUIRE(std::regex_match(line, m, itemRe));
      report[section][m[2]] = {m[1] == "X", verbose ? std::string(m[4]) : ""};
    }
  }
  return report;
}

bool canLoad(const char* soname) {
  void* h = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

std::string firstLineOf(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  hvd::cli::RunOptions options;
  options.env = env;
  auto run = hvd::cli::runAndCapture(argv, options);
  if (!run || !run->succeeded()) return "";
  std::string text = run->out.empty() ? run->err : run->out;
  return text.substr(0, text.find('\n'));
}

void writeScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
}

// Slurm's clients fall back to DNS without a configuration: tests always name one.
const std::string kNoSlurmConf = "SLURM_CONF=/nonexistent/hvdtest/slurm.conf";

}  // namespace

TEST_CASE("the check-build report has horovodrun's layout with its sections in order, the frameworks first", "[e2e]") {
  auto run = runHvdrun({"--check-build"}, withEnv(environmentWith({kNoSlurmConf})));
  REQUIRE(run.exitCode == 0);
  CHECK(run.err.empty());
  Report report = parseReport(run.out, false);
  std::vector<std::string> sections;
  std::regex sectionRe(R"(\n\n([A-Za-z ]+):\n)");
  for (std::sregex_iterator it(run.out.begin(), run.out.end(), sectionRe), end; it != end; ++it) {
    sections.push_back((*it)[1]);
  }
  CHECK(sections == std::vector<std::string>{"Available Frameworks", "Available Controllers",
                                             "Available Tensor Operations", "Available Launchers",
                                             "Job Authentication"});
  CHECK(report["Available Frameworks"].size() == 3);
  for (const char* name : {"TensorFlow", "PyTorch", "Keras"}) CHECK(report["Available Frameworks"].count(name) == 1);
  CHECK(report["Available Controllers"].size() == 3);
  CHECK(report["Available Tensor Operations"].size() == 4);
  CHECK(report["Available Launchers"].size() == 4);
  for (const char* name : {"TCP", "MPI", "PMIx"}) CHECK(report["Available Controllers"].count(name) == 1);
  for (const char* name : {"Ring (CPU)", "MPI", "NCCL", "CUDA"})
    CHECK(report["Available Tensor Operations"].count(name) == 1);
  for (const char* name : {"local", "srun", "mpirun", "ssh"}) CHECK(report["Available Launchers"].count(name) == 1);
  CHECK(run.out.back() == '\n');
}

TEST_CASE("the short -cb gives the same report and verbose mode adds a reason to every [ ]", "[e2e]") {
  auto env = environmentWith({kNoSlurmConf});
  auto plain = runHvdrun({"-cb"}, withEnv(env));
  auto verbose = runHvdrun({"-cb", "--verbose"}, withEnv(env));
  REQUIRE(plain.exitCode == 0);
  REQUIRE(verbose.exitCode == 0);
  Report p = parseReport(plain.out, false);
  Report v = parseReport(verbose.out, true);
  for (const auto& [section, items] : v) {
    for (const auto& [name, item] : items) {
      if (name == "(note)") continue;
      INFO(section << " / " << name << ": " << item.detail);
      // Lightning and Accelerate run on PyTorch: listed with --verbose only.
      if (name == "PyTorch Lightning" || name == "Accelerate") {
        CHECK(p[section].count(name) == 0);
        continue;
      }
      CHECK(p[section][name].available == item.available);
      if (!item.available) CHECK_FALSE(item.detail.empty());
    }
  }
}

TEST_CASE("every [X] is something this test can see working on the machine", "[e2e]") {
  auto env = environmentWith({kNoSlurmConf});
  Report v = parseReport(runHvdrun({"-cb", "-v"}, withEnv(env)).out, true);
  bool mpiLoads = canLoad("libmpi.so.40");
  bool pmixLoads = canLoad("libpmix.so.2");
  bool driverLoads = canLoad("libcuda.so.1");
  std::string mpirunSays = firstLineOf({"mpirun", "--version"}, env);

  if (v["Available Controllers"]["MPI"].available) CHECK(mpiLoads);
  if (v["Available Tensor Operations"]["MPI"].available) CHECK(mpiLoads);
  if (v["Available Controllers"]["PMIx"].available) CHECK(pmixLoads);
  if (!driverLoads) {
    // No driver, no GPU (as on CI): CUDA and NCCL must say so rather than claim them.
    for (const char* op : {"CUDA", "NCCL"}) {
      INFO(op << ": " << v["Available Tensor Operations"][op].detail);
      CHECK_FALSE(v["Available Tensor Operations"][op].available);
      if (v["Available Tensor Operations"][op].detail.find("built without") == std::string::npos) {
        CHECK(v["Available Tensor Operations"][op].detail.find("no GPU visible") != std::string::npos);
      }
    }
  }
  if (mpiLoads) CHECK(v["Available Controllers"]["MPI"].detail.find("found Open MPI") != std::string::npos);
  if (!mpiLoads) CHECK_FALSE(v["Available Controllers"]["MPI"].available);

  CHECK(v["Available Launchers"]["local"].available);
  if (mpirunSays.empty()) {
    CHECK_FALSE(v["Available Launchers"]["mpirun"].available);
  } else {
    CHECK(v["Available Launchers"]["mpirun"].detail.find("found " + mpirunSays) == 0);
  }
  if (v["Available Launchers"]["mpirun"].available) CHECK_FALSE(mpirunSays.empty());
}

TEST_CASE("srun is never run without a Slurm configuration, and that is reported", "[e2e]") {
  hvd::test::TempDir bin;
  // An srun that would leave a trace if hvdrun ran it.
  writeScript(bin.path() + "/srun", "touch " + bin.path() + "/srun-was-run; echo slurm 99.0");
  auto run = runHvdrun({"-cb", "-v"}, withEnv(environmentWith({kNoSlurmConf, "PATH=" + bin.path() + ":/usr/bin:/bin"})));
  Report v = parseReport(run.out, true);
  CHECK_FALSE(v["Available Launchers"]["srun"].available);
  CHECK(v["Available Launchers"]["srun"].detail == "SLURM_CONF=/nonexistent/hvdtest/slurm.conf cannot be read");
  struct stat st {};
  CHECK(::stat((bin.path() + "/srun-was-run").c_str(), &st) != 0);
}

TEST_CASE("with a Slurm configuration, srun's own version answer is what the report shows", "[e2e]") {
  hvd::test::TempDir dir;
  std::ofstream(dir.path() + "/slurm.conf") << "ClusterName=hvdtest\nSlurmctldHost=localhost(127.0.0.1)\n";
  writeScript(dir.path() + "/srun", "echo slurm 99.1");
  auto env = environmentWith({"SLURM_CONF=" + dir.path() + "/slurm.conf", "PATH=" + dir.path() + ":/usr/bin:/bin"});
  Report v = parseReport(runHvdrun({"-cb", "-v"}, withEnv(env)).out, true);
  CHECK(v["Available Launchers"]["srun"].detail.rfind("found slurm 99.1", 0) == 0);
}

TEST_CASE("ssh is an available launcher where an OpenSSH client is in PATH", "[e2e]") {
  auto env = environmentWith({kNoSlurmConf, "PATH=/usr/bin:/bin"});
  if (::access("/usr/bin/ssh", X_OK) != 0) hvd::test::skipTest("no /usr/bin/ssh (scripts/setup.sh installs it)");
  Report v = parseReport(runHvdrun({"-cb", "-v"}, withEnv(env)).out, true);
  CHECK(v["Available Launchers"]["ssh"].available);
  CHECK(v["Available Launchers"]["ssh"].detail.rfind("found OpenSSH", 0) == 0);
}

TEST_CASE("a launcher tool that is missing or broken is [ ] with the reason", "[e2e]") {
  hvd::test::TempDir bin;
  writeScript(bin.path() + "/mpirun", "echo 'mpirun: cannot find the PMIx server' >&2; exit 1");
  auto env = environmentWith({kNoSlurmConf, "PATH=" + bin.path()});
  Report v = parseReport(runHvdrun({"-cb", "-v"}, withEnv(env)).out, true);
  CHECK_FALSE(v["Available Launchers"]["mpirun"].available);
  CHECK(v["Available Launchers"]["mpirun"].detail ==
        "'mpirun --version' failed with exit code 1: mpirun: cannot find the PMIx server");
  CHECK_FALSE(v["Available Launchers"]["ssh"].available);
  CHECK(v["Available Launchers"]["ssh"].detail == "ssh is not in PATH");
  CHECK(v["Available Launchers"]["local"].available);
}

TEST_CASE("the report names libcrypto, whose HMAC authenticates every connection of a job", "[e2e]") {
  auto run = runHvdrun({"-cb"}, withEnv(environmentWith({kNoSlurmConf})));
  Report report = parseReport(run.out, false);
  REQUIRE(report["Job Authentication"].size() == 1);
  const std::string& item = report["Job Authentication"].begin()->first;
  CHECK(std::regex_match(item, std::regex(R"(HMAC-SHA-256 from OpenSSL \d+\.\d+\.\d+.*)")));
  CHECK(report["Job Authentication"].begin()->second.available);
}

TEST_CASE("without a Python every framework is [ ] and -v says no Python was found", "[e2e]") {
  hvd::test::TempDir bin;  // a PATH with no python3 in it
  auto env = environmentWith({kNoSlurmConf, "PATH=" + bin.path(), "VIRTUAL_ENV"});
  auto run = runHvdrun({"-cb", "-v"}, withEnv(env));
  REQUIRE(run.exitCode == 0);
  Report v = parseReport(run.out, true);
  CHECK(v["Available Frameworks"].count("(note)") == 0);
  for (const char* name : {"TensorFlow", "PyTorch", "Keras", "PyTorch Lightning", "Accelerate"}) {
    INFO(name);
    CHECK_FALSE(v["Available Frameworks"][name].available);
    CHECK(v["Available Frameworks"][name].detail ==
          "no Python with hvd: no virtual environment is active and python3 is not in PATH");
  }
}

TEST_CASE("a Python without hvd is named, with the import's own error, on every framework", "[e2e]") {
  if (::access("/usr/bin/python3", X_OK) != 0) hvd::test::skipTest("no /usr/bin/python3 (scripts/setup.sh installs it)");
  hvd::test::TempDir empty;  // PYTHONPATH to nothing: hvd is installed only in .venv
  auto env = environmentWith({kNoSlurmConf, "PATH=/usr/bin:/bin", "PYTHONNOUSERSITE=1", "VIRTUAL_ENV", "PYTHONPATH"});
  Report v = parseReport(runHvdrun({"-cb", "-v"}, withEnv(env)).out, true);
  CHECK(v["Available Frameworks"]["(note)"].detail.rfind("the Python ranks run: /usr/bin/python3 (3.", 0) == 0);
  for (const char* name : {"TensorFlow", "PyTorch", "Keras"}) {
    INFO(name << ": " << v["Available Frameworks"][name].detail);
    CHECK_FALSE(v["Available Frameworks"][name].available);
    const std::string& detail = v["Available Frameworks"][name].detail;
    CHECK((detail.find("not installed in /usr/bin/python3") != std::string::npos ||
           detail.find("hvd cannot be imported in /usr/bin/python3: ModuleNotFoundError: No module named 'hvd'") !=
               std::string::npos));
  }
}

TEST_CASE("a Python that never answers costs the report at most its 10 s deadline", "[e2e]") {
  hvd::test::TempDir venv;
  ::mkdir((venv.path() + "/bin").c_str(), 0755);
  writeScript(venv.path() + "/bin/python3", "exec sleep 600");
  auto env = environmentWith({kNoSlurmConf, "VIRTUAL_ENV=" + venv.path()});
  auto start = std::chrono::steady_clock::now();
  auto options = withEnv(env);
  options.timeout = std::chrono::seconds(60);
  auto run = runHvdrun({"-cb", "-v"}, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(run.exitCode == 0);
  CHECK(seconds < 20);
  Report v = parseReport(run.out, true);
  CHECK(v["Available Frameworks"]["PyTorch"].detail == venv.path() + "/bin/python3 did not answer within 10 s");
  CHECK(v["Available Launchers"]["local"].available);
}

TEST_CASE("a Python that fails is [ ] with the first line it printed", "[e2e]") {
  hvd::test::TempDir venv;
  ::mkdir((venv.path() + "/bin").c_str(), 0755);
  writeScript(venv.path() + "/bin/python3", "echo 'Fatal Python error: init_fs_encoding' >&2; exit 1");
  Report v = parseReport(
      runHvdrun({"-cb", "-v"}, withEnv(environmentWith({kNoSlurmConf, "VIRTUAL_ENV=" + venv.path()}))).out, true);
  CHECK(v["Available Frameworks"]["Keras"].detail ==
        venv.path() + "/bin/python3 failed: Fatal Python error: init_fs_encoding");
}
