// cli/options/srun_args.cc: --srun-args' words and the options hvdrun keeps.
#include "cli/options/srun_args.h"

#include <sstream>

namespace hvd::cli {
namespace {

struct Kept {
  std::string_view longName;  // "--ntasks"
  std::string_view shortName;  // "-n", or ""
  std::string_view instead;
};

// What hvdrun puts on the step's command line itself: srun's values would undo its plan.
constexpr Kept kKept[] = {
    {"--ntasks", "-n", "-np gives the number of ranks"},
    {"--nodes", "-N", "the ranks go on the allocation's nodes as the plan places them; --nnodes checks their number"},
    {"--ntasks-per-node", "", "--nproc-per-node gives the ranks on every node"},
    {"--distribution", "-m", "hvdrun places every rank itself (SLURM_HOSTFILE, --distribution=arbitrary): docs/plan.md"},
    {"--nodelist", "-w", "run hvdrun in an allocation of those nodes (salloc -w, sbatch -w)"},
    {"--exclude", "-x", "run hvdrun in an allocation without those nodes"},
    {"--label", "-l", "hvdrun labels every rank's lines itself"},
    {"--input", "-i", "--stdin chooses the rank that reads hvdrun's stdin"},
    {"--kill-on-bad-exit", "-K", "hvdrun ends the step at the first failed rank (or, with --min-np, goes on)"},
    {"--multi-prog", "", "every rank runs the one program after --"},
    {"--overlap", "", "hvdrun adds it when it runs inside a step already"},
};

// The option a word spells ("--ntasks=4" and "--ntasks" are --ntasks; "-n4" and "-n" -n).
const Kept* keptBy(std::string_view word) {
  for (const Kept& k : kKept) {
    if (word == k.longName || (word.size() > k.longName.size() && word.substr(0, k.longName.size()) == k.longName &&
                               word[k.longName.size()] == '=')) {
      return &k;
    }
    if (!k.shortName.empty() && word.substr(0, 2) == k.shortName) return &k;
  }
  return nullptr;
}

}  // namespace

Result<std::vector<std::string>> parseSrunArgs(std::string_view text) {
  std::vector<std::string> words;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;) words.push_back(w);
  for (const std::string& w : words) {
    if (const Kept* k = keptBy(w)) {
      return Status(Errc::kInvalidUsage, "--srun-args: " + std::string(k->longName) +
                                             (w.rfind("--", 0) == 0 ? "" : " ('" + w + "')") +
                                             " is hvdrun's to set on the srun step")
          .withHint(std::string(k->instead));
    }
  }
  return words;
}

bool srunArgsBindCpus(const std::vector<std::string>& words) {
  for (const std::string& w : words) {
    if (w == "--cpu-bind" || w.rfind("--cpu-bind=", 0) == 0 || w.rfind("--cpu_bind", 0) == 0) return true;
  }
  return false;
}

}  // namespace hvd::cli
