// cli/options/option_values.cc: the values' checks.
#include "cli/options/option_values.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>

#include "cli/plan/rank_plan.h"
#include "cli/plan/whole_number.h"
#include "cli/user_error.h"
#include "runtime/common/rank_contract.h"

namespace hvd::cli {
namespace {

// Set for every rank by hvdrun itself: -x may not give them (the rank's environment would
// hold two values, or hvdrun's would be wrong for the job). The identity variables are
// rankEnvironment's own; the rest say where the job's rendezvous, GPUs, elastic worlds and
// preemption notice are. The runtime's settings (HVD_TIMEOUT, HVD_SHARED_MEMORY, ...) and
// any other name pass, as mpirun -x passes them; those an option of hvdrun's sets are
// refused as given twice.
bool setPerRank(const std::string& name) {
  namespace rc = rank_contract;
  static const std::set<std::string> kNames = [] {
    std::set<std::string> names;
    for (std::string_view name :
         {rc::kMasterAddr, rc::kMasterPort, rc::kTfConfig, rc::kCudaVisibleDevices, rc::kLocalGpu,
          rc::kRendezvousAddr, rc::kRendezvousPort, rc::kSecretKey, rc::kElasticWorker, rc::kElasticAfter,
          rc::kPreemptFile, rc::kPreemptSignal, rc::kPlanHosts, rc::kPlanGpus, rc::kPlanRuntimeVariables,
          rc::kPlanElastic, rc::kTorchErrorFile}) {
      names.emplace(name);
    }
    for (const std::string& kv : rankEnvironment(RankAssignment{})) names.insert(kv.substr(0, kv.find('=')));
    return names;
  }();
  return kNames.count(name) > 0 || name.rfind("TORCHELASTIC_", 0) == 0;
}

}  // namespace

int parseIntIn(const std::string& option, const std::string& text, int minimum, int maximum) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < minimum || value > maximum) {
    throw UserError(ExitCode::kUsage,
                    option + " expects a whole number from " + std::to_string(minimum) + " to " +
                        std::to_string(maximum) + ", got '" + text + "'",
                    kUsageHint);
  }
  return value;
}

// A whole number past int's range reads as the nearest end of it: too many, or under 1.
int parsePositiveInt(const std::string& option, const std::string& text) {
  auto number = wholeNumber(text);
  if (!number) throw UserError(ExitCode::kUsage, option + " expects a whole number, got '" + text + "'", kUsageHint);
  const int value = *number;
  if (value <= 0) {
    throw UserError(ExitCode::kUsage, option + " must be at least 1, got '" + text + "'", kUsageHint);
  }
  return value;
}

// "0,3-5" -> {0,3,4,5}.
std::set<int> parseRankList(const std::string& option, const std::string& text) {
  std::set<int> ranks;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = item.find('-', 1);
    int lo = parseIntIn(option, item.substr(0, dash), 0, 1 << 24);
    int hi = dash == std::string::npos ? lo : parseIntIn(option, item.substr(dash + 1), 0, 1 << 24);
    if (hi < lo || hi - lo > 1 << 20) {
      throw UserError(ExitCode::kUsage, option + ": '" + item + "' runs downwards or is too long", kUsageHint);
    }
    for (int r = lo; r <= hi; ++r) ranks.insert(r);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ranks;
}

// -x NAME=VALUE or -x NAME (hvdrun's own value; skipped when unset, as mpirun skips it), as
// "NAME=value" lines; `taken`: the variables the options already give the ranks.
std::vector<std::string> exportedVariables(const std::vector<std::string>& items, const std::vector<std::string>& taken) {
  std::vector<std::string> out;
  std::set<std::string> names;
  for (const std::string& kv : taken) names.insert(kv.substr(0, kv.find('=')));
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    auto refuse = [&](const std::string& why, const std::string& hint) {
      throw UserError(ExitCode::kUsage, "-x " + item + ": " + why, hint);
    };
    const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                       });
    if (!valid) {
      refuse("'" + name + "' is not a variable name (letters, digits and '_', not starting with a digit)",
             "write -x NAME=VALUE to set a variable for every rank, or -x NAME to pass on hvdrun's own");
    }
    if (setPerRank(name)) {
      refuse("hvdrun sets " + name + " for each rank itself, from the job's plan",
             "docs/environment.md lists what hvdrun sets; its options choose those values (-np, --gpus-per-rank, ...)");
    }
    if (!names.insert(name).second) {
      refuse(name + " is given twice (by -x or by an option of hvdrun's)", "give each variable once");
    }
    if (eq != std::string::npos) {
      out.push_back(item);
    } else if (const char* value = std::getenv(name.c_str()); value != nullptr) {
      out.push_back(name + "=" + value);
    }
  }
  return out;
}

// --stdin RANK or none. No "all": a pipe or terminal can be read once, and copying it to
// every rank would hold what the slowest reader has not taken yet.
void parseStdinTarget(const std::string& text, Options& o) {
  if (text == "none") {
    o.stdinRank.reset();
    return;
  }
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw UserError(ExitCode::kUsage, "--stdin expects a rank or 'none', got '" + text + "'",
                    "one rank reads hvdrun's stdin (0 unless --stdin names another), the others read an empty one; "
                    "for input every rank reads, give the program a file to open");
  }
  o.stdinRank = value;
}

std::chrono::milliseconds parseSeconds(const std::string& option, const std::string& text) {
  double seconds = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  // Written so that NaN, which compares false with everything, fails it too.
  if (ec != std::errc() || end != text.data() + text.size() || !(seconds >= 0 && seconds <= 86400)) {
    throw UserError(ExitCode::kUsage, option + " expects seconds between 0 and 86400, got '" + text + "'",
                    kUsageHint);
  }
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// --signal NAME[@SECONDS]: the preemption notice. Only USR1 and USR2 qualify, because
// hvdrun treats the others (TERM, INT, HUP) as orders to stop the job.
void parsePreemptSignal(const std::string& text, Options& o) {
  std::string name = text.substr(0, text.find('@'));
  if (name.rfind("B:", 0) == 0) name = name.substr(2);  // sbatch's "batch shell only" prefix
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  if (name != "USR1" && name != "USR2") {
    throw UserError(ExitCode::kUsage, "--signal: '" + text + "' is not a preemption signal hvdrun can forward",
                    "use USR2@SECONDS (the default, USR2@90) or USR1@SECONDS; NCCL itself uses USR1");
  }
  o.preemptSignal = name;
  if (text.find('@') != std::string::npos) {
    o.preemptSeconds = parseIntIn("--signal", text.substr(text.find('@') + 1), 0, 65535);
  }
}

}  // namespace hvd::cli
