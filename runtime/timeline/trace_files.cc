// runtime/timeline/trace_files.cc: naming and merging per-rank traces.
#include "runtime/timeline/trace_files.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace hvd::timeline {

std::string rankTracePath(const std::string& path, int rank) {
  if (rank == 0) return path;
  size_t slash = path.rfind('/');
  size_t dot = path.rfind('.');
  std::string tag = ".rank" + std::to_string(rank);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1) return path + tag;
  return path.substr(0, dot) + tag + path.substr(dot);
}

std::vector<std::string> existingRankTraces(const std::string& path, int maxRanks) {
  std::vector<std::string> out;
  for (int r = 0; r < maxRanks; ++r) {
    struct stat st {};
    std::string p = rankTracePath(path, r);
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) out.push_back(p);
  }
  return out;
}

Status mergeTraces(const std::vector<std::string>& inputs, const std::string& output) {
  std::string merged = "[";
  bool first = true;
  for (const std::string& in : inputs) {
    std::ifstream file(in, std::ios::binary);
    if (!file) return systemError("cannot read the trace '" + in + "'");
    std::ostringstream text;
    text << file.rdbuf();
    std::string body = text.str();
    size_t open = body.find_first_not_of(" \t\r\n");
    size_t close = body.find_last_not_of(" \t\r\n");
    if (open == std::string::npos || body[open] != '[' || body[close] != ']') {
      return invalidArgument("'" + in + "' is not a Chrome trace in the JSON array format (it should start with '[' and end with ']')");
    }
    std::string events = body.substr(open + 1, close - open - 1);
    if (events.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    merged += first ? "\n" : ",\n";
    merged += events;
    first = false;
  }
  merged += "\n]\n";
  std::string temporary = output + ".merging";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(merged.data(), static_cast<std::streamsize>(merged.size())) || !out.flush()) {
      std::remove(temporary.c_str());
      return systemError("cannot write the merged trace '" + temporary + "'");
    }
  }
  if (std::rename(temporary.c_str(), output.c_str()) != 0) {
    Status s = systemError("cannot move the merged trace into '" + output + "'");
    std::remove(temporary.c_str());
    return s;
  }
  return Status::ok();
}

}  // namespace hvd::timeline
