// slurm/sbatch_template.cc: one pass over the template; every "{{" must open a known
// placeholder. Block placeholders (directives, setup) expand to whole lines.
#include "slurm/sbatch_template.h"

#include "runtime/common/closest_match.h"

namespace hvd::slurm {
namespace {

std::string joinLines(const std::vector<std::string>& lines) {
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) text += (i ? "\n" : "") + lines[i];
  return text;
}

std::string trimmed(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  return begin == std::string_view::npos ? "" : std::string(text.substr(begin, end - begin + 1));
}

}  // namespace

Result<std::string> renderSbatchTemplate(std::string_view text, const std::string& name, const ScriptParts& parts) {
  std::map<std::string, std::string> values = parts.scalars;
  values["directives"] = joinLines(parts.directives);
  values["setup"] = joinLines(parts.setup);
  values["launch"] = parts.launch;
  std::vector<std::string> known;
  for (const auto& [key, value] : values) known.push_back(key);

  std::string out;
  bool sawLaunch = false;
  size_t line = 1, lineStart = 0, pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("{{", pos);
    std::string_view chunk = text.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos);
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (chunk[i] == '\n') ++line, lineStart = pos + i + 1;
    }
    out += chunk;
    if (open == std::string_view::npos) break;
    std::string where = name + ":" + std::to_string(line) + ":" + std::to_string(open - lineStart + 1) + ": ";
    size_t close = text.find("}}", open + 2);
    size_t newline = text.find('\n', open);
    if (close == std::string_view::npos || (newline != std::string_view::npos && newline < close)) {
      return Status(Errc::kInvalidArgument, where + "'{{' is not closed by '}}' on the same line")
          .withHint("placeholders look like {{launch}}; docs/sbatch.md lists them");
    }
    std::string key = trimmed(text.substr(open + 2, close - open - 2));
    auto value = values.find(key);
    if (value == values.end()) {
      std::string best = closestMatch(key, known, 3);
      return Status(Errc::kInvalidArgument, where + "unknown placeholder '{{" + key + "}}'" +
                                                (best.empty() ? "" : " (did you mean '{{" + best + "}}'?)"))
          .withHint("the placeholders are {{directives}}, {{setup}}, {{launch}}, {{job_name}}, {{nodes}}, "
                    "{{ntasks_per_node}}, {{gpus_per_node}}, {{hvdrun}} and {{version}}");
    }
    sawLaunch |= key == "launch";
    out += value->second;
    pos = close + 2;
    // An empty block alone on its line leaves no blank line behind.
    bool aloneOnLine = open == lineStart && pos < text.size() && text[pos] == '\n';
    if (value->second.empty() && aloneOnLine) ++pos, ++line, lineStart = pos;
  }
  if (!sawLaunch) {
    return Status(Errc::kInvalidArgument, name + ": the template has no {{launch}} placeholder")
        .withHint("without it the job would never run hvdrun; put {{launch}} where the job's work starts");
  }
  return out;
}

}  // namespace hvd::slurm
