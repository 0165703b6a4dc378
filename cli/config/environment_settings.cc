// cli/config/environment_settings.cc: HVDRUN_* variables, checked like config keys.
#include "cli/config/environment_settings.h"

#include <algorithm>
#include <cctype>

#include "runtime/common/ascii_case.h"
#include "runtime/common/closest_match.h"

namespace hvd::cli {
namespace {

constexpr std::string_view kPrefix = "HVDRUN_";

std::optional<std::string> flagValue(std::string text) {
  text = asciiLower(text);
  if (text == "1" || text == "true" || text == "yes" || text == "on") return "true";
  if (text == "0" || text == "false" || text == "no" || text == "off") return "false";
  return std::nullopt;
}

}  // namespace

std::string variableFor(const std::string& key) {
  std::string name(kPrefix);
  for (char c : key) name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

Result<SettingLayer> environmentLayer(const std::map<std::string, std::string, std::less<>>& environment,
                                      const std::vector<SettingKey>& keys) {
  SettingLayer layer{"HVDRUN_* variables", {}};
  for (const auto& entry : environment) {
    // Named copies: clang before 16 cannot capture structured bindings in a lambda.
    const std::string& name = entry.first;
    const std::string& value = entry.second;
    if (name.rfind(kPrefix, 0) != 0 || name == kProfileVariable) continue;
    auto key = std::find_if(keys.begin(), keys.end(), [&](const SettingKey& k) { return variableFor(k.key) == name; });
    if (key == keys.end()) {
      std::vector<std::string> names;
      for (const SettingKey& k : keys) names.push_back(variableFor(k.key));
      const SettingKey* spelled = settingOtherwiseNamed(keys, name, variableFor);
      std::string best = spelled != nullptr ? variableFor(spelled->key) : closestMatch(name, names, 3);
      return Status(Errc::kInvalidArgument, "unknown setting variable " + name +
                                                (best.empty() ? "" : " (did you mean " + best + "?)"))
          .withHint("HVDRUN_<OPTION> sets --<option> (docs/config.md); unset it or fix its name");
    }
    switch (key->kind) {
      case SettingKind::kFlag: {
        auto flag = flagValue(value);
        if (!flag) {
          return Status(Errc::kInvalidArgument, name + "='" + value + "': expected 1 or 0 (true/false, yes/no, on/off)");
        }
        layer.values[key->key] = {*flag};
        break;
      }
      case SettingKind::kValue: layer.values[key->key] = {value}; break;
      case SettingKind::kList: {
        std::vector<std::string> elements;
        size_t start = 0;
        while (start <= value.size()) {
          size_t end = value.find('\n', start);
          std::string element = value.substr(start, end == std::string::npos ? std::string::npos : end - start);
          if (!element.empty()) elements.push_back(element);
          if (end == std::string::npos) break;
          start = end + 1;
        }
        layer.values[key->key] = std::move(elements);
        break;
      }
    }
  }
  return layer;
}

}  // namespace hvd::cli
