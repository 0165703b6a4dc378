// cli/supervise/output_router_test.cc: lines in, the console's text and the files out,
// with no pipes and no processes.
#include "cli/supervise/output_router.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cli/supervise/line_reader.h"
#include "cli/supervise/line_splitter.h"

namespace hvd::cli {
namespace {

// What the console was handed, per fd, in order.
struct Console {
  std::string out, err;
  std::vector<std::pair<int, std::string>> writes;
  OutputRouter::Write writer() {
    return [this](int fd, std::string_view text) {
      (fd == 1 ? out : err) += text;
      writes.emplace_back(fd, std::string(text));
    };
  }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("chunks of ranks' streams come out as whole prefixed lines, never mixed", "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 2;
  OutputRouter router(settings, console.writer());
  auto zero = rankLineReader(0, LineSplitter::kDefaultMaxLine);
  auto one = rankLineReader(1, LineSplitter::kDefaultMaxLine);
  auto route = [&](size_t process, bool isErr) {
    return [&router, process, isErr](int rank, std::string_view line, char end) {
      router.line(process, isErr, rank, line, end);
    };
  };
  zero->feed("hel", route(0, false));
  one->feed("one's whole line\nand a ha", route(1, false));
  zero->feed("lo\nerr", route(0, false));
  one->feed("lf\n", route(1, false));
  zero->finish(route(0, false));
  router.flush();
  CHECK(console.out == "[1]<stdout>:one's whole line\n[0]<stdout>:hello\n[1]<stdout>:and a half\n[0]<stdout>:err\n");
  CHECK(console.err.empty());
}

TEST_CASE("stdout and stderr lines keep their order across the two fds", "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 1;
  OutputRouter router(settings, console.writer());
  router.line(0, false, 0, "a", '\n');
  router.line(0, true, 0, "b", '\n');
  router.line(0, false, 0, "c", '\n');
  router.flush();
  REQUIRE(console.writes.size() == 3);
  CHECK(console.writes[0] == std::pair<int, std::string>{1, "[0]<stdout>:a\n"});
  CHECK(console.writes[1] == std::pair<int, std::string>{2, "[0]<stderr>:b\n"});
  CHECK(console.writes[2] == std::pair<int, std::string>{1, "[0]<stdout>:c\n"});
}

TEST_CASE("a launcher's own words pass unprefixed and are remembered apart from its ranks' lines", "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 4;
  settings.launcherOutput = true;
  OutputRouter router(settings, console.writer());
  router.line(0, true, 3, "rank three's complaint", '\n');
  router.line(0, true, -1, "srun: error: node02: task 3: Exited with exit code 2", '\n');
  router.flush();
  CHECK(console.err == "[3]<stderr>:rank three's complaint\nsrun: error: node02: task 3: Exited with exit code 2\n");
  CHECK(router.labelledStderr().at(3) == std::deque<std::string>{"rank three's complaint"});
  CHECK(router.labelledStderr().at(-1).size() == 1);
  CHECK(router.launcherMessages() == std::vector<std::string>{"srun: error: node02: task 3: Exited with exit code 2"});
  CHECK(router.lastStderr(0).empty());
}

TEST_CASE("a rank's last ten stderr lines are kept, each cut at 500 bytes, for the failure report", "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 1;
  OutputRouter router(settings, console.writer());
  for (int i = 0; i < 12; ++i) router.line(0, true, 0, "line " + std::to_string(i), '\n');
  router.line(0, true, 0, std::string(700, 'x'), '\n');
  router.line(0, true, 0, "a bar redrawn", '\r');  // not a line for the report
  auto last = router.lastStderr(0);
  REQUIRE(last.size() == OutputRouter::kRememberedStderrLines);
  CHECK(last.front() == "line 3");
  CHECK(last.back() == std::string(500, 'x'));
}

TEST_CASE("a ranks filter shows only its ranks on the console while the files hold every rank", "[unit][router]") {
  const std::string dir = (std::filesystem::temp_directory_path() / ("router-test-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Console console;
  OutputSettings settings;
  settings.rankCount = 2;
  settings.consoleRanks = {1};
  settings.outputDir = dir;
  {
    OutputRouter router(settings, console.writer());
    router.createFiles(0);
    router.createFiles(1);
    router.line(0, false, 0, "zero", '\n');
    router.line(1, false, 1, "one", '\n');
    router.line(1, true, 1, "one's error", '\n');
    router.flush();
    CHECK(router.incompleteFiles() == 0);
  }
  CHECK(console.out == "[1]<stdout>:one\n");
  CHECK(readFile(dir + "/rank.0/stdout") == "zero\n");
  CHECK(readFile(dir + "/rank.1/stdout") == "one\n");
  CHECK(readFile(dir + "/rank.1/stderr") == "one's error\n");
  CHECK(readFile(dir + "/rank.0/stderr").empty());  // silent, but there
  std::filesystem::remove_all(dir);
}

TEST_CASE("a rank whose output directory cannot be made is warned of once for both its files", "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 2;
  settings.outputDir = "/dev/null/out";  // not a directory, for root too
  OutputRouter router(settings, console.writer());
  for (int rank : {0, 1}) {
    router.createFiles(rank);
    router.line(static_cast<size_t>(rank), false, rank, "out", '\n');
    router.line(static_cast<size_t>(rank), true, rank, "err", '\n');
  }
  router.flush();
  CHECK(console.err ==
        "hvdrun: warning: creating /dev/null/out/rank.0: Not a directory; that rank's output files are incomplete\n"
        "[0]<stderr>:err\n"
        "hvdrun: warning: creating /dev/null/out/rank.1: Not a directory; that rank's output files are incomplete\n"
        "[1]<stderr>:err\n");
  CHECK(router.incompleteFiles() == 4);
}

TEST_CASE("a prompt given out open is continued by its rest, and ended before anything else is written",
          "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 2;
  OutputRouter router(settings, console.writer());
  router.line(0, false, 0, "name? ", LineSplitter::kOpenEnd);
  router.line(0, false, 0, "Ada", '\n');
  router.line(0, false, 0, "(Pdb) ", LineSplitter::kOpenEnd);
  router.line(1, false, 1, "meanwhile", '\n');
  router.line(0, false, 0, "rest", '\n');
  router.flush();
  CHECK(console.out == "[0]<stdout>:name? Ada\n[0]<stdout>:(Pdb) \n[1]<stdout>:meanwhile\n[0]<stdout>:rest\n");
}

TEST_CASE("timestamps start each console line with the local time to the millisecond", "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 1;
  settings.timestamps = true;
  OutputRouter router(settings, console.writer());
  router.line(0, false, 0, "tick", '\n');
  router.flush();
  CHECK(std::regex_match(console.out, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} \[0\]<stdout>:tick\n)")));
}

TEST_CASE("a host agent's words before its hello are remembered but not printed, and stay its own", "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 2;
  settings.hostAgents = true;
  OutputRouter router(settings, console.writer());
  router.line(0, true, -1, "ssh: connect to host node2 port 22: Connection refused", '\n', /*toConsole=*/false);
  router.line(0, true, 1, "rank one speaks", '\n');
  router.flush();
  CHECK(console.err == "[1]<stderr>:rank one speaks\n");
  CHECK(router.lastStderr(0) == std::deque<std::string>{"ssh: connect to host node2 port 22: Connection refused"});
  CHECK(router.labelledStderr().at(1) == std::deque<std::string>{"rank one speaks"});
}

TEST_CASE("hvdrun's own words end an open line and come after the lines read so far", "[unit][router]") {
  Console console;
  OutputSettings settings;
  settings.rankCount = 1;
  OutputRouter router(settings, console.writer());
  router.line(0, true, 0, "half a line", LineSplitter::kOpenEnd);
  router.own(2, "hvdrun: warning: something\n");
  CHECK(console.err == "[0]<stderr>:half a line\nhvdrun: warning: something\n");
}

}  // namespace hvd::cli
