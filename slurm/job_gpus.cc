// slurm/job_gpus.cc: "GRES=gpu:2(IDX:0-1)", "GRES=gpu:a100:2(IDX:0,2),nic:1(IDX:0)", "GRES=".
#include "slurm/job_gpus.h"

#include <charconv>

#include "slurm/hostlist.h"

namespace hvd::slurm {
namespace {

std::string_view fieldValue(std::string_view line, std::string_view name) {
  size_t at = 0;
  while ((at = line.find(name, at)) != std::string_view::npos) {
    if (at == 0 || line[at - 1] == ' ') break;
    at += name.size();
  }
  if (at == std::string_view::npos) return {};
  std::string_view rest = line.substr(at + name.size());
  return rest.substr(0, rest.find(' '));
}

Result<std::vector<std::string>> indexList(std::string_view text, std::string_view gres) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view item = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t dash = item.find('-');
    unsigned lo = 0, hi = 0;
    auto bad = [&] { return invalidArgument("GRES='" + std::string(gres) + "': '" + std::string(item) + "' is not a GPU index or range"); };
    std::string_view loText = item.substr(0, dash);
    if (std::from_chars(loText.data(), loText.data() + loText.size(), lo).ptr != loText.data() + loText.size() || loText.empty()) return bad();
    hi = lo;
    if (dash != std::string_view::npos) {
      std::string_view hiText = item.substr(dash + 1);
      if (std::from_chars(hiText.data(), hiText.data() + hiText.size(), hi).ptr != hiText.data() + hiText.size() || hiText.empty() || hi < lo || hi - lo > 4096) return bad();
    }
    for (unsigned v = lo; v <= hi; ++v) out.push_back(std::to_string(v));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

Result<std::map<std::string, std::vector<std::string>>> parseJobGpus(std::string_view detail) {
  std::map<std::string, std::vector<std::string>> gpus;
  size_t start = 0;
  while (start < detail.size()) {
    size_t end = detail.find('\n', start);
    if (end == std::string_view::npos) end = detail.size();
    std::string_view line = detail.substr(start, end - start);
    start = end + 1;
    size_t first = line.find_first_not_of(' ');
    if (first == std::string_view::npos || line.substr(first).rfind("Nodes=", 0) != 0) continue;
    line = line.substr(first);
    std::string_view nodes = fieldValue(line, "Nodes=");
    auto names = expandHostlist(nodes);
    if (!names) return names.status().withContext("scontrol show job -d: Nodes=");
    std::vector<std::string> devices;
    std::string_view gres = fieldValue(line, "GRES=");
    // Several resources are separated by commas outside parentheses.
    size_t itemStart = 0;
    int depth = 0;
    for (size_t i = 0; i <= gres.size(); ++i) {
      if (i < gres.size()) {
        if (gres[i] == '(') ++depth;
        if (gres[i] == ')') --depth;
        if (gres[i] != ',' || depth > 0) continue;
      }
      std::string_view item = gres.substr(itemStart, i - itemStart);
      itemStart = i + 1;
      if (item.rfind("gpu:", 0) != 0 && item != "gpu") continue;
      size_t idx = item.find("(IDX:");
      if (idx == std::string_view::npos || item.back() != ')') {
        return invalidArgument("scontrol show job -d: GRES='" + std::string(gres) + "' has no (IDX:...) for its GPUs");
      }
      auto list = indexList(item.substr(idx + 5, item.size() - idx - 6), gres);
      if (!list) return list.status();
      devices.insert(devices.end(), list->begin(), list->end());
    }
    for (std::string& name : *names) gpus[std::move(name)] = devices;
  }
  return gpus;
}

}  // namespace hvd::slurm
