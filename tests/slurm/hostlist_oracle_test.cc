// tests/slurm/hostlist_oracle_test.cc: our hostlist code against Slurm's own, the real
// `scontrol` (it needs only SLURM_CONF naming a valid slurm.conf, no running daemon).
// Over thousands of generated expressions, valid and invalid: where Slurm accepts, our
// names equal its names; where it rejects (anything on stderr, or nothing printed), we
// reject. The one kind of input Slurm accepts and we refuse on purpose is a '[' that is
// never closed (Slurm prints a mangled name for it); those cases are counted and shown.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "slurm/hostlist.h"
#include "tests/support/hvdrun_runner.h"

namespace {

struct SlurmAnswer {
  bool accepted = false;
  bool timedOut = false;  // no answer: a failure of the test, never a rejection
  std::vector<std::string> lines;
  std::string err;
};

class Scontrol {
 public:
  Scontrol() {
    auto exe = hvd::cli::findExecutable("scontrol", std::getenv("PATH") != nullptr ? std::getenv("PATH") : "");
    if (!exe) hvd::test::skipTest("scontrol is not installed (Debian package slurm-wlm)");
    exe_ = *exe;
    // Slurm's clients look the controller up in DNS without a configuration: always give one.
    std::ofstream(dir_.path() + "/slurm.conf") << "ClusterName=hvdoracle\nSlurmctldHost=localhost(127.0.0.1)\n"
                                               << "NodeName=n1 NodeAddr=127.0.0.1 CPUs=1\n";
    env_ = hvd::test::environmentWith({"SLURM_CONF=" + dir_.path() + "/slurm.conf"});
  }

  SlurmAnswer ask(const std::string& command, const std::string& argument) const {
    hvd::cli::RunOptions options;
    options.env = env_;
    // Some expressions expand to 300,000 names; give scontrol time on a loaded machine.
    options.timeout = std::chrono::seconds(120);
    // "--": an expression may start with '-', which scontrol would read as its own option.
    auto run = hvd::cli::runAndCapture({exe_, "show", command, "--", argument}, options);
    SlurmAnswer answer;
    if (!run) {
      answer.err = run.status().message();
      return answer;
    }
    std::istringstream in(run->out);
    for (std::string line; std::getline(in, line);) answer.lines.push_back(line);
    answer.err = run->err;
    answer.timedOut = run->timedOut;
    answer.accepted = run->succeeded() && run->err.empty() && !answer.lines.empty();
    return answer;
  }

  // Asks for every argument, two at a time (CI has two cores).
  std::vector<SlurmAnswer> askAll(const std::string& command, const std::vector<std::string>& arguments) const {
    std::vector<SlurmAnswer> answers(arguments.size());
    const size_t workers = 2;
    std::vector<std::thread> threads;
    for (size_t w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        for (size_t i = w; i < arguments.size(); i += workers) answers[i] = ask(command, arguments[i]);
      });
    }
    for (auto& t : threads) t.join();
    return answers;
  }

 private:
  hvd::test::TempDir dir_;
  std::string exe_;
  std::vector<std::string> env_;
};

class ExpressionGenerator {
 public:
  explicit ExpressionGenerator(uint32_t seed) : rng_(seed) {}

  std::string expression() {
    std::string out;
    int tokens = 1 + pick(3);
    for (int t = 0; t < tokens; ++t) {
      if (t > 0) out += pickOf({",", ",", " ", "\t", ", ", ",,"});
      out += token();
    }
    if (chance(35)) mutate(out);
    return out;
  }

  std::vector<std::string> names() {
    std::vector<std::string> names;
    int count = pick(30);
    for (int i = 0; i < count; ++i) {
      std::string prefix = pickOf({"n", "node", "gpu-a", "r1-n", "x", "", "a.b", "n0", "c"});
      if (chance(10)) {
        names.push_back(prefix.empty() ? "login" : prefix);
      } else {
        names.push_back(prefix + std::string(static_cast<size_t>(chance(25) ? pick(3) : 0), '0') +
                        std::to_string(pick(chance(20) ? 1200 : 25)));
      }
    }
    return names;
  }

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  std::string pickOf(std::initializer_list<const char*> options) {
    return *(options.begin() + pick(static_cast<int>(options.size())));
  }

  std::string number(int max) {
    std::string digits = std::to_string(pick(max));
    if (chance(30)) digits = std::string(static_cast<size_t>(1 + pick(3)), '0') + digits;
    return digits;
  }

  std::string item(int maxSpan) {
    if (chance(40)) return number(200);
    int lo = pick(120);
    int hi = lo + pick(maxSpan);
    std::string loText = std::to_string(lo), hiText = std::to_string(hi);
    if (chance(30)) loText = std::string(static_cast<size_t>(1 + pick(2)), '0') + loText;
    if (chance(15)) hiText = "0" + hiText;
    if (chance(5)) std::swap(loText, hiText);
    return loText + "-" + hiText;
  }

  std::string group(int maxSpan) {
    std::string out = "[";
    int items = 1 + pick(3);
    for (int i = 0; i < items; ++i) out += (i > 0 ? "," : "") + item(maxSpan);
    return out + "]";
  }

  std::string token() {
    std::string prefix = pickOf({"n", "node", "gpu-a", "rack", "tux", "c", "", "x.y", "nid0"});
    if (chance(25)) return prefix + (chance(80) ? number(5000) : "");
    int groups = 1 + (chance(40) ? 1 + pick(2) : 0);
    std::string out = prefix;
    for (int g = 0; g < groups; ++g) {
      if (g > 0) out += pickOf({"-", "", "-node", "n", ".", "_ib"});
      out += group(groups > 1 ? 4 : 30);
    }
    return out;
  }

  void mutate(std::string& s) {
    static const std::string junk = "[]-,x a+0\t9b";
    size_t at = static_cast<size_t>(pick(static_cast<int>(s.size()) + 1));
    switch (pick(4)) {
      case 0: s.insert(at, 1, junk[static_cast<size_t>(pick(static_cast<int>(junk.size())))]); break;
      case 1: if (!s.empty() && at < s.size()) s.erase(at, 1); break;
      case 2: s += pickOf({"x", "-ib", "]", "[", ",", "[1", "0"}); break;
      default: if (at < s.size()) s[at] = junk[static_cast<size_t>(pick(static_cast<int>(junk.size())))];
    }
  }

  std::mt19937 rng_;
};

std::string shown(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '\t' ? std::string("\\t") : std::string(1, c);
  return "'" + out + "'";
}

}  // namespace

TEST_CASE("expansion equals scontrol show hostnames on 12,000 generated expressions", "[slurm][oracle]") {
  Scontrol scontrol;
  ExpressionGenerator gen(20261122);
  std::vector<std::string> expressions;
  // Fixed edge cases first, then generated ones.
  for (const char* e : {"n[09-10]", "node[8-10]", "rack[1-2]-node[01-04]", "nodes[006,011]", "a[1-2]b[3-4]c[5-6]",
                        "n[1-3]x", "tux[0-3]-ib", "node[3-1]", "n[ 1-3]", "n[1 -3]", "n[+1-+3]", "n[1-]", "[1-3]",
                        "n[0-65535]", "n[0-65536]", "a[1-65536]b[1]", "a[1-60000,1-60000]b[1]", "n[[1-2]",
                        "a]b[1-2]", "n[1]-[2]", "n[1, 3]", "n[1 ]", "123,0001", "n[1,,2]", "n[]"}) {
    expressions.emplace_back(e);
  }
  std::string longBracket = "n[";
  for (int i = 1; i < 3000; i += 2) longBracket += std::to_string(i) + ",";
  longBracket.back() = ']';
  expressions.push_back(longBracket);
  expressions.push_back("a[1-2]" + std::string(1100, 'x') + "[1-2]");
  while (expressions.size() < 12000) expressions.push_back(gen.expression());

  auto answers = scontrol.askAll("hostnames", expressions);
  size_t slurmAccepted = 0, slurmRejected = 0, deliberate = 0, mismatches = 0;
  for (size_t i = 0; i < expressions.size(); ++i) {
    const std::string& e = expressions[i];
    const SlurmAnswer& slurm = answers[i];
    INFO("scontrol did not answer within 120 s for " << shown(e));
    REQUIRE_FALSE(slurm.timedOut);
    auto ours = hvd::slurm::expandHostlist(e);
    if (!slurm.accepted) {
      ++slurmRejected;
      // An empty expression is no error for either of us: both print nothing.
      if (ours.isOk() && ours->empty() && slurm.err.empty()) continue;
      if (ours.isOk()) {
        ++mismatches;
        UNSCOPED_INFO("Slurm rejects " << shown(e) << " (" << slurm.err << ") but we expand it to "
                                       << ours->size() << " names");
      }
      continue;
    }
    ++slurmAccepted;
    if (!ours.isOk()) {
      if (ours.status().message().find("is never closed") != std::string::npos) {
        ++deliberate;
        continue;
      }
      ++mismatches;
      UNSCOPED_INFO("Slurm accepts " << shown(e) << " but we reject it: " << ours.status().message());
      continue;
    }
    if (*ours != slurm.lines) {
      ++mismatches;
      UNSCOPED_INFO("different names for " << shown(e) << ": Slurm " << slurm.lines.size() << ", ours "
                                          << ours->size());
    }
  }
  WARN("oracle: " << expressions.size() << " expressions, Slurm accepted " << slurmAccepted << " and rejected "
                  << slurmRejected << "; " << deliberate << " unclosed-'[' inputs refused on purpose");
  CHECK(mismatches == 0);
  // The generator must exercise both sides, or the comparison proves little.
  CHECK(slurmAccepted > 6000);
  CHECK(slurmRejected > 1500);
}

TEST_CASE("hvdrun hostlist given an expression as an argument prints what scontrol show hostnames prints, on 400 generated ones", "[slurm][oracle]") {
  // Through the command line, not the library: CLI11 once read an argument in brackets
  // ("[1-4]") as a list of its own and printed "1-4". Expressions starting with a bracket
  // come first, then the generator's.
  Scontrol scontrol;
  ExpressionGenerator gen(20261123);
  std::vector<std::string> expressions = {"[1-4]", "[01-03,7],n[1-2]", "[0099-0102] tux[08-10]", "[1-2]x[3-4]",
                                          "[1,2]y[3]", "[1-2][3-4]", "[5]", "[a]", "[]", "[1-2]x"};
  while (expressions.size() < 400) {
    std::string e = gen.expression();
    if (e.empty() || e.front() == '-') continue;  // an argument hvdrun would read as an option
    expressions.push_back(std::move(e));
  }
  auto answers = scontrol.askAll("hostnames", expressions);
  hvd::cli::RunOptions options;
  options.timeout = std::chrono::seconds(120);
  size_t mismatches = 0, bracketFirst = 0;
  for (size_t i = 0; i < expressions.size(); ++i) {
    const std::string& e = expressions[i];
    const SlurmAnswer& slurm = answers[i];
    REQUIRE_FALSE(slurm.timedOut);
    bracketFirst += e.find_first_not_of(" ,\t") != std::string::npos && e[e.find_first_not_of(" ,\t")] == '[';
    auto run = hvd::cli::runAndCapture({HVD_HVDRUN_PATH, "hostlist", e}, options);
    REQUIRE(run.isOk());
    std::vector<std::string> lines;
    std::istringstream in(run->out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (!slurm.accepted) {
      if (run->exitCode == 0 && !lines.empty()) {
        ++mismatches;
        UNSCOPED_INFO("Slurm rejects " << shown(e) << " but hvdrun hostlist prints " << lines.size() << " names");
      }
      continue;
    }
    if (run->exitCode != 0) {
      if (run->err.find("is never closed") != std::string::npos) continue;  // refused on purpose (see above)
      ++mismatches;
      UNSCOPED_INFO("Slurm accepts " << shown(e) << " but hvdrun hostlist says: " << run->err);
    } else if (lines != slurm.lines) {
      ++mismatches;
      UNSCOPED_INFO("different names for " << shown(e) << ": Slurm " << slurm.lines.size() << ", hvdrun hostlist "
                                          << lines.size() << (lines.empty() ? "" : " (first '" + lines[0] + "')"));
    }
  }
  CHECK(mismatches == 0);
  CHECK(bracketFirst >= 10);
}

TEST_CASE("compression equals scontrol show hostlist and hostlistsorted on 2,000 generated lists",
          "[slurm][oracle]") {
  Scontrol scontrol;
  ExpressionGenerator gen(7);
  std::vector<std::vector<std::string>> lists;
  std::vector<std::string> joined;
  while (lists.size() < 2000) {
    auto names = gen.names();
    if (names.empty()) continue;
    std::string j;
    for (const auto& n : names) j += (j.empty() ? "" : ",") + n;
    lists.push_back(std::move(names));
    joined.push_back(std::move(j));
  }
  auto plain = scontrol.askAll("hostlist", joined);
  auto sorted = scontrol.askAll("hostlistsorted", joined);
  size_t mismatches = 0;
  for (size_t i = 0; i < lists.size(); ++i) {
    std::string ours = *hvd::slurm::compressHostlist(lists[i]);
    std::string oursSorted = *hvd::slurm::compressHostlistSorted(lists[i]);
    std::string theirs = plain[i].lines.empty() ? "" : plain[i].lines[0];
    std::string theirsSorted = sorted[i].lines.empty() ? "" : sorted[i].lines[0];
    if (ours != theirs) {
      ++mismatches;
      UNSCOPED_INFO("hostlist " << joined[i] << ": Slurm " << theirs << ", ours " << ours);
    }
    if (oursSorted != theirsSorted) {
      ++mismatches;
      UNSCOPED_INFO("hostlistsorted " << joined[i] << ": Slurm " << theirsSorted << ", ours " << oursSorted);
    }
  }
  CHECK(mismatches == 0);
}
