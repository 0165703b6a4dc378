// cli/config/horovod_config.cc: line by line; each key is looked up in horovodrun's schema.
#include "cli/config/horovod_config.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "runtime/common/ascii_case.h"
#include "runtime/common/closest_match.h"

namespace hvd::cli {
namespace {

const std::vector<std::string> kSections = {"controller",  "params",          "autotune", "timeline",
                                            "stall_check", "library_options", "logging"};

// What a key of horovodrun's schema becomes here.
enum class Becomes {
  kValue,         // hvdrun's option of that name, the value as given
  kFlag,          // hvdrun's flag, true or false
  kNoStallCheck,  // stall_check.enabled: false is --no-stall-check
  kNothing,       // no counterpart: named in the note when it asks for something
};
struct SchemaKey {
  std::string section, key;
  Becomes becomes;
  std::string option;  // hvdrun's setting (kValue, kFlag)
};
const std::vector<SchemaKey> kSchema = {
    {"params", "fusion_threshold_mb", Becomes::kValue, "fusion-threshold-mb"},
    {"params", "cycle_time_ms", Becomes::kValue, "cycle-time-ms"},
    {"params", "cache_capacity", Becomes::kValue, "cache-capacity"},
    {"params", "hierarchical_allreduce", Becomes::kNothing, ""},
    {"params", "hierarchical_allgather", Becomes::kNothing, ""},
    {"autotune", "enabled", Becomes::kNothing, ""},
    {"autotune", "log_file", Becomes::kNothing, ""},
    {"autotune", "warmup_samples", Becomes::kNothing, ""},
    {"autotune", "steps_per_sample", Becomes::kNothing, ""},
    {"autotune", "bayes_opt_max_samples", Becomes::kNothing, ""},
    {"autotune", "gaussian_process_noise", Becomes::kNothing, ""},
    {"timeline", "filename", Becomes::kValue, "timeline-filename"},
    {"timeline", "mark_cycles", Becomes::kFlag, "timeline-mark-cycles"},
    {"stall_check", "enabled", Becomes::kNoStallCheck, "no-stall-check"},
    {"stall_check", "warning_time_seconds", Becomes::kValue, "stall-check-warning-time-seconds"},
    {"stall_check", "shutdown_time_seconds", Becomes::kValue, "stall-check-shutdown-time-seconds"},
    {"library_options", "mpi_threads_disable", Becomes::kNothing, ""},
    {"library_options", "num_nccl_streams", Becomes::kNothing, ""},
    {"library_options", "ccl_bgt_affinity", Becomes::kNothing, ""},
    {"library_options", "gloo_timeout_seconds", Becomes::kValue, "gloo-timeout-seconds"},
    {"logging", "level", Becomes::kValue, "log-level"},
    {"logging", "hide_timestamp", Becomes::kNothing, ""},
};

// YAML's booleans as horovodrun's files write them.
std::optional<bool> boolean(const std::string& value) {
  const std::string v = asciiLower(value);
  if (v == "true" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

// The line without its comment (a '#' outside quotes) and trailing blanks.
std::string withoutComment(const std::string& line) {
  char quote = 0;
  size_t end = line.size();
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      end = i;
      break;
    }
  }
  std::string out = line.substr(0, end);
  while (!out.empty() && (out.back() == ' ' || out.back() == '\t' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string unquoted(std::string value) {
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front()) {
    return value.substr(1, value.size() - 2);
  }
  return value;
}

// "key: value" (value may be empty), or nullopt for anything else.
std::optional<std::pair<std::string, std::string>> keyValue(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  std::string key = text.substr(0, colon);
  if (!std::all_of(key.begin(), key.end(),
                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; })) {
    return std::nullopt;
  }
  std::string value = text.substr(colon + 1);
  if (!value.empty() && value.front() != ' ' && value.front() != '\t') return std::nullopt;
  value.erase(0, value.find_first_not_of(" \t"));
  if (value.empty()) return std::make_pair(key, std::string());
  const char first = value.front();
  if (first == '-' && value.size() > 1 && value[1] == ' ') return std::nullopt;
  if (first == '[' || first == '{' || first == '&' || first == '*' || first == '|' || first == '>') return std::nullopt;
  return std::make_pair(key, unquoted(value));
}

}  // namespace

bool isHorovodConfig(const std::string& path, const std::string& text) {
  const std::string name = asciiLower(path);
  for (const char* ext : {".yaml", ".yml"}) {
    const std::string e(ext);
    if (name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) return true;
  }
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::string body = withoutComment(line);
    if (body.empty() || body.front() == ' ' || body.front() == '\t') continue;
    auto kv = keyValue(body);
    if (kv && std::find(kSections.begin(), kSections.end(), kv->first) != kSections.end()) return true;
  }
  return false;
}

Result<HorovodConfig> horovodConfig(const std::string& path, const std::string& text) {
  HorovodConfig config;
  config.layer.origin = path;
  std::vector<std::string> unused;  // what asks for something hvdrun has not, in file order
  std::string section;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const std::string body = withoutComment(line);
    if (body.find_first_not_of(" \t") == std::string::npos) continue;
    const bool indented = body.front() == ' ' || body.front() == '\t';
    auto kv = keyValue(body.substr(body.find_first_not_of(" \t")));
    if (!kv) {
      return invalidArgument(where +
                             "hvdrun reads horovodrun's config as sections of 'key: value' lines, and this "
                             "is not one");
    }
    const auto& [key, value] = *kv;
    if (!indented) {
      if (std::find(kSections.begin(), kSections.end(), key) == kSections.end()) {
        std::string message = where + "unknown section '" + key + "' of horovodrun's config";
        if (std::string best = closestMatch(key, kSections, 3); !best.empty())
          message += " (did you mean '" + best + "'?)";
        return invalidArgument(message);
      }
      if (key == "controller") {
        const std::string v = asciiLower(value);
        if (v != "gloo" && v != "mpi")
          return invalidArgument(where + "controller must be gloo or mpi, not '" + value + "'");
        config.layer.values[v] = {"true"};
        section.clear();
        continue;
      }
      if (!value.empty()) return invalidArgument(where + key + " is a section: its keys go on the lines below it");
      section = key;
      continue;
    }
    if (section.empty()) return invalidArgument(where + "'" + key + "' is not in a section (params:, timeline:, ...)");
    auto entry = std::find_if(kSchema.begin(), kSchema.end(),
                              [&](const SchemaKey& s) { return s.section == section && s.key == key; });
    if (entry == kSchema.end()) {
      std::vector<std::string> known;
      for (const SchemaKey& s : kSchema) {
        if (s.section == section) known.push_back(s.key);
      }
      std::string message = where + "unknown key '" + key + "' in " + section;
      if (std::string best = closestMatch(key, known, std::max<size_t>(3, key.size() / 2)); !best.empty()) {
        message += " (did you mean '" + best + "'?)";
      }
      return invalidArgument(message);
    }
    const std::string name = section + "." + key;
    auto flag = [&]() -> Result<bool> {
      auto b = boolean(value);
      if (!b) return invalidArgument(where + name + " must be true or false, not '" + value + "'");
      return *b;
    };
    switch (entry->becomes) {
      case Becomes::kValue:
        if (value.empty()) return invalidArgument(where + name + " has no value");
        config.layer.values[entry->option] = {value};
        break;
      case Becomes::kFlag: {
        auto b = flag();
        if (!b) return b.status();
        config.layer.values[entry->option] = {*b ? "true" : "false"};
        break;
      }
      case Becomes::kNoStallCheck: {
        auto b = flag();
        if (!b) return b.status();
        if (!*b) config.layer.values[entry->option] = {"true"};
        break;
      }
      case Becomes::kNothing: {
        // A switch left off asks for nothing; any other value asks for what is not here.
        auto b = boolean(value);
        if (b && !*b) break;
        // The autotuner's settings matter only where it is turned on: said once, for it all.
        if (section == "autotune") {
          if (key == "enabled") unused.push_back("autotune (all of it)");
          break;
        }
        unused.push_back(name);
        break;
      }
    }
  }
  if (!unused.empty()) {
    std::string list;
    for (const std::string& u : unused) list += (list.empty() ? "" : ", ") + u;
    config.notes.push_back(path + ": " + list + " (horovodrun's) " + (unused.size() == 1 ? "changes" : "change") +
                           " nothing here, as on the command line");
  }
  return config;
}

}  // namespace hvd::cli
