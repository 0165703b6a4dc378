// cli/config/config_file.cc: toml++ walks the file; each value is checked against the
// kind of option its key names and turned into the text the command line would carry.
#include "cli/config/config_file.h"

#include <toml++/toml.h>

#include "runtime/common/closest_match.h"

#include <algorithm>
#include <sstream>

namespace hvd::cli {
namespace {

constexpr const char* kDefaultProfileKey = "default-profile";
constexpr const char* kProfilesKey = "profile";

std::string where(const std::string& path, const toml::source_region& region) {
  std::ostringstream out;
  out << path << ":" << region.begin.line << ":" << region.begin.column << ": ";
  return out.str();
}

const char* typeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

// A scalar as the command line would spell it; nullopt for arrays and tables.
std::optional<std::string> scalarText(const toml::node& node) {
  if (auto s = node.value_exact<std::string>()) return *s;
  if (auto i = node.value_exact<int64_t>()) return std::to_string(*i);
  if (auto d = node.value_exact<double>()) {
    std::ostringstream out;
    out << *d;
    return out.str();
  }
  return std::nullopt;
}

class Reader {
 public:
  Reader(const std::string& path, const std::vector<SettingKey>& keys) : path_(path), keys_(keys) {}

  Status readTable(const toml::table& table, SettingLayer& layer, bool topLevel) {
    for (auto&& [name, node] : table) {
      std::string key(name.str());
      if (topLevel && (key == kDefaultProfileKey || key == kProfilesKey)) continue;
      const SettingKey* setting = find(key);
      if (setting == nullptr) return unknownKey(key, name.source());
      auto values = valuesOf(*setting, node);
      if (!values.isOk()) return values.status();
      layer.values[key] = std::move(*values);
    }
    return Status::ok();
  }

 private:
  const SettingKey* find(const std::string& key) const {
    auto it = std::find_if(keys_.begin(), keys_.end(), [&](const SettingKey& k) { return k.key == key; });
    return it == keys_.end() ? nullptr : &*it;
  }

  Status unknownKey(const std::string& key, const toml::source_region& region) const {
    std::vector<std::string> names;
    for (const SettingKey& k : keys_) names.push_back(k.key);
    const SettingKey* spelled = settingOtherwiseNamed(keys_, key, [](const std::string& other) { return other; });
    std::string best = spelled != nullptr ? spelled->key : closestMatch(key, names, std::max<size_t>(3, key.size() / 3));
    std::string message = where(path_, region) + "unknown key '" + key + "'";
    if (!best.empty()) message += " (did you mean '" + best + "'?)";
    return Status(Errc::kInvalidArgument, message)
        .withHint("the keys are hvdrun's long option names (docs/config.md); profiles go in [profile.NAME]");
  }

  Status wrongType(const SettingKey& key, const toml::node& node, const char* expected) const {
    return Status(Errc::kInvalidArgument, where(path_, node.source()) + "'" + key.key + "' must be " + expected +
                                              ", not " + typeName(node));
  }

  Result<std::vector<std::string>> valuesOf(const SettingKey& key, const toml::node& node) const {
    switch (key.kind) {
      case SettingKind::kFlag:
        if (auto b = node.value_exact<bool>()) return std::vector<std::string>{*b ? "true" : "false"};
        return wrongType(key, node, "true or false");
      case SettingKind::kValue:
        if (auto text = scalarText(node)) return std::vector<std::string>{*text};
        return wrongType(key, node, "a string or a number");
      case SettingKind::kList: return listOf(key, node);
    }
    return Status(Errc::kInternal, "unhandled setting kind");
  }

  // An array of scalars; one scalar counts as a list of one; a table (for `env`) gives
  // NAME=value elements.
  Result<std::vector<std::string>> listOf(const SettingKey& key, const toml::node& node) const {
    std::vector<std::string> values;
    if (auto text = scalarText(node)) return std::vector<std::string>{*text};
    if (const toml::array* array = node.as_array()) {
      for (const toml::node& element : *array) {
        auto text = scalarText(element);
        if (!text) return wrongType(key, element, "a string");
        values.push_back(*text);
      }
      return values;
    }
    if (const toml::table* table = node.as_table(); table != nullptr && key.key == "env") {
      for (auto&& [name, value] : *table) {
        auto text = scalarText(value);
        if (!text) return wrongType(key, value, "a table of strings");
        values.push_back(std::string(name.str()) + "=" + *text);
      }
      return values;
    }
    return wrongType(key, node, key.key == "env" ? "a table or an array of NAME=value strings" : "an array of strings");
  }

  const std::string& path_;
  const std::vector<SettingKey>& keys_;
};

}  // namespace

Result<SettingLayer> configFileLayer(const std::string& path, const std::string& text, const std::string& profile,
                                     const std::vector<SettingKey>& keys) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Status(Errc::kInvalidArgument, where(path, e.source()) + std::string(e.description()))
        .withHint("the file must be TOML (https://toml.io); docs/config.md has an example");
  }
  SettingLayer layer{path, {}};
  Reader reader(path, keys);
  HVD_RETURN_IF_ERROR(reader.readTable(root, layer, true));

  std::string chosen = profile;
  if (const toml::node* node = root.get(kDefaultProfileKey); node != nullptr) {
    auto name = node->value_exact<std::string>();
    if (!name) {
      return Status(Errc::kInvalidArgument,
                    where(path, node->source()) + "'default-profile' must be a string, not " + typeName(*node));
    }
    if (chosen.empty()) chosen = *name;
  }
  const toml::node* profilesNode = root.get(kProfilesKey);
  const toml::table* profiles = profilesNode != nullptr ? profilesNode->as_table() : nullptr;
  if (profilesNode != nullptr && profiles == nullptr) {
    return Status(Errc::kInvalidArgument, where(path, profilesNode->source()) +
                                              "'profile' must be a table of profiles ([profile.NAME]), not " +
                                              typeName(*profilesNode));
  }
  if (profiles != nullptr) {
    for (auto&& [name, node] : *profiles) {
      if (!node.is_table()) {
        return Status(Errc::kInvalidArgument, where(path, node.source()) + "profile '" + std::string(name.str()) +
                                                  "' must be a table ([profile." + std::string(name.str()) + "])");
      }
      // Every profile is checked, not only the chosen one: a typo waits for no one.
      SettingLayer scratch;
      HVD_RETURN_IF_ERROR(reader.readTable(*node.as_table(), scratch, false));
    }
  }
  if (chosen.empty()) return layer;
  const toml::table* selected = profiles != nullptr ? (*profiles)[chosen].as_table() : nullptr;
  if (selected == nullptr) {
    std::string known;
    if (profiles != nullptr) {
      for (auto&& [name, node] : *profiles) known += (known.empty() ? "" : ", ") + std::string(name.str());
    }
    return Status(Errc::kInvalidArgument, "no profile '" + chosen + "' in " + path)
        .withHint(known.empty() ? "the file defines no [profile.NAME] table" : "its profiles: " + known);
  }
  HVD_RETURN_IF_ERROR(reader.readTable(*selected, layer, false));
  layer.origin = path + " [profile." + chosen + "]";
  return layer;
}

std::string defaultConfigPath(const char* xdgConfigHome, const char* home) {
  if (xdgConfigHome != nullptr && xdgConfigHome[0] == '/') return std::string(xdgConfigHome) + "/hvdrun/config.toml";
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.config/hvdrun/config.toml";
  return "";
}

}  // namespace hvd::cli
