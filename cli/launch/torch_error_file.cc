#include "cli/launch/torch_error_file.h"

#include <stdlib.h>

#include <filesystem>
#include <regex>

#include "runtime/common/json.h"

namespace hvd::cli {

std::optional<RecordedError> readTorchErrorFile(const std::string& path) {
  auto doc = readJsonFile(path);
  if (!doc || !doc->has("message")) return std::nullopt;
  const Json& message = (*doc)["message"];
  RecordedError error;
  if (std::holds_alternative<std::string>(message.value)) {  // torch's newer, plain form
    error.message = message.str();
    return error;
  }
  if (!message.has("message") || !std::holds_alternative<std::string>(message["message"].value)) return std::nullopt;
  error.message = message["message"].str();
  if (message.has("extraInfo") && message["extraInfo"].has("py_callstack")) {
    const Json& stack = message["extraInfo"]["py_callstack"];
    if (std::holds_alternative<std::string>(stack.value)) {
      static const std::regex frame(R"re(File "([^"]+)", line (\d+), in (\S+))re");
      const std::string& text = stack.str();
      for (auto it = std::sregex_iterator(text.begin(), text.end(), frame); it != std::sregex_iterator(); ++it) {
        error.where = "at " + (*it)[1].str() + ":" + (*it)[2].str() + " in " + (*it)[3].str();
      }
    }
  }
  // One line each in the summary: the message's first line is what a reader needs.
  if (auto eol = error.message.find('\n'); eol != std::string::npos) error.message.resize(eol);
  return error;
}

std::string encodeRecordedError(const RecordedError& error) { return error.message + "\n" + error.where; }

RecordedError decodeRecordedError(const std::string& text) {
  size_t eol = text.find('\n');
  return RecordedError{text.substr(0, eol), eol == std::string::npos ? "" : text.substr(eol + 1)};
}

TorchErrorFiles::TorchErrorFiles() {
  std::error_code ec;
  std::string pattern = std::filesystem::temp_directory_path(ec).string() + "/hvdrun-errors-XXXXXX";
  if (!ec && ::mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
}

TorchErrorFiles::~TorchErrorFiles() {
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string TorchErrorFiles::path(int rank) const {
  return dir_.empty() ? "" : dir_ + "/rank" + std::to_string(rank) + ".json";
}

}  // namespace hvd::cli
