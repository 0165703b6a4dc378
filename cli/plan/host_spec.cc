// cli/plan/host_spec.cc: -H lists and hostfiles.
#include "cli/plan/host_spec.h"

#include <map>

#include "cli/plan/host_name.h"
#include "cli/plan/whole_number.h"
#include "slurm/hostlist.h"

namespace hvd::cli {
namespace {

constexpr int kMaxSlots = 1 << 20;

// A whole number past int's range reads as the nearest end of it, for checkSlots to name as
// too large or too small (it is a number, just not a slot count).
bool parseSlots(std::string_view text, int& slots) {
  auto number = wholeNumber(text);
  if (number) slots = *number;
  return number.has_value();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

Status checkSlots(std::string_view slotsText, int slots, const std::string& where, std::string_view item) {
  if (slots <= 0) {
    return invalidArgument(where + "'" + std::string(item) + "' has " + std::string(slotsText) +
                           " slots; a host needs at least 1");
  }
  if (slots > kMaxSlots) {
    return invalidArgument(where + "'" + std::string(item) + "' has more than " + std::to_string(kMaxSlots) + " slots");
  }
  return Status::ok();
}

}  // namespace

Result<std::vector<HostSlots>> parseHostList(std::string_view text) {
  std::vector<HostSlots> hosts;
  std::map<std::string, std::string, std::less<>> seen;  // host -> the item that named it
  if (trim(text).empty()) return invalidArgument("-H: the host list is empty");
  // Items are separated by commas outside brackets (a hostlist may hold "[1,3]").
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size()) {
      if (text[i] == '[') ++depth;
      if (text[i] == ']') --depth;
      if (text[i] != ',' || depth > 0) continue;
    }
    std::string_view item = trim(text.substr(start, i - start));
    std::string where = "-H item " + std::to_string(hosts.size() + 1) + ": ";
    start = i + 1;
    if (item.empty()) return invalidArgument("-H '" + std::string(text) + "': an empty item at position " + std::to_string(i + 1));
    std::string_view names = item, slotsText = "1";
    bool slotsGiven = false;
    size_t colon = item.rfind(':');
    if (colon != std::string_view::npos && item.find(']', colon) == std::string_view::npos) {
      names = item.substr(0, colon);
      slotsText = item.substr(colon + 1);
      slotsGiven = true;
    }
    int slots = 0;
    if (!parseSlots(slotsText, slots)) {
      return invalidArgument(where + "'" + std::string(item) + "' has slot count '" + std::string(slotsText) +
                             "', which is not a whole number");
    }
    HVD_RETURN_IF_ERROR(checkSlots(slotsText, slots, where, item));
    if (names.empty()) return invalidArgument(where + "'" + std::string(item) + "' names no host");
    auto expanded = slurm::expandHostlist(names);
    if (!expanded) return expanded.status().withContext("-H");
    for (std::string& host : *expanded) {
      if (Status s = checkHostName(host); !s.isOk()) {
        return invalidArgument(where + "'" + std::string(item) + "': " + s.message());
      }
      if (auto it = seen.find(host); it != seen.end()) {
        return invalidArgument("-H: host '" + host + "' is listed twice ('" + it->second + "' and '" + std::string(item) + "')");
      }
      seen.emplace(host, std::string(item));
      hosts.push_back({std::move(host), slots, slotsGiven});
    }
  }
  return hosts;
}

Result<std::vector<HostSlots>> parseHostfile(std::string_view text, std::string_view path) {
  std::vector<HostSlots> hosts;
  std::map<std::string, size_t, std::less<>> entry;  // host -> its index in hosts
  int lineNumber = 0;
  // A UTF-8 byte order mark (Windows editors write one) is no part of the first host.
  size_t start = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    size_t lineStart = start;
    start = end + 1;
    ++lineNumber;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    std::string_view content = trim(line);
    if (content.empty()) {
      if (end == text.size()) break;
      continue;
    }
    auto at = [&](std::string_view token) {
      size_t column = static_cast<size_t>(token.data() - text.data()) - lineStart + 1;
      return std::string(path) + ":" + std::to_string(lineNumber) + ":" + std::to_string(column) + ": ";
    };
    // "host", "host:N", "host slots=N" (Open MPI's form; max_slots=... is accepted and ignored).
    size_t space = content.find_first_of(" \t");
    std::string_view host = content.substr(0, space);
    std::string_view rest = space == std::string_view::npos ? std::string_view() : trim(content.substr(space));
    std::string_view slotsText = "1";
    bool slotsGiven = false;
    if (size_t colon = host.rfind(':'); colon != std::string_view::npos) {
      slotsText = host.substr(colon + 1);
      host = host.substr(0, colon);
      slotsGiven = true;
    }
    while (!rest.empty()) {
      size_t next = rest.find_first_of(" \t");
      std::string_view field = rest.substr(0, next);
      rest = next == std::string_view::npos ? std::string_view() : trim(rest.substr(next));
      if (field.rfind("slots=", 0) == 0) {
        slotsText = field.substr(6);
        slotsGiven = true;
      } else if (field.rfind("max_slots=", 0) == 0) {
        continue;
      } else {
        std::string hint = field.rfind("slot", 0) == 0 || field.find('=') != std::string_view::npos
                               ? " (did you mean 'slots=N'?)" : " (expected 'slots=N')";
        return invalidArgument(at(field) + "unknown field '" + std::string(field) + "'" + hint);
      }
    }
    int slots = 0;
    if (!parseSlots(slotsText, slots)) {
      return invalidArgument(at(slotsText) + "slot count '" + std::string(slotsText) + "' is not a whole number");
    }
    HVD_RETURN_IF_ERROR(checkSlots(slotsText, slots, at(host), content));
    if (host.empty()) return invalidArgument(at(content) + "'" + std::string(content) + "' names no host");
    if (Status s = checkHostName(host); !s.isOk()) return invalidArgument(at(host) + s.message());
    if (auto it = entry.find(host); it != entry.end()) {
      // mpirun's and every PBS site's form: one line per slot, a host repeated. Its lines'
      // slots add up, and the count is a given one.
      HostSlots& first = hosts[it->second];
      if (first.slots + slots > kMaxSlots) {
        return invalidArgument(at(host) + "host '" + std::string(host) + "' has more than " +
                               std::to_string(kMaxSlots) + " slots over its lines");
      }
      first.slots += slots;
      first.slotsGiven = true;
    } else {
      entry.emplace(std::string(host), hosts.size());
      hosts.push_back({std::string(host), slots, slotsGiven});
    }
    if (end == text.size()) break;
  }
  if (hosts.empty()) return invalidArgument(std::string(path) + ": lists no host");
  return hosts;
}

}  // namespace hvd::cli
