// cli/launch/torch_error_file.h: torchrun's best failure feature, under hvdrun. A rank
// whose entry point is decorated with torch.distributed.elastic.multiprocessing.errors
// .record writes its uncaught exception as JSON to $TORCHELASTIC_ERROR_FILE; hvdrun gives
// every rank it forks such a file and shows the failing rank's exception in its summary.
#pragma once

#include <optional>
#include <string>

namespace hvd::cli {

// From the file @record wrote ({"message": {"message": "ValueError: ...", "extraInfo":
// {"py_callstack": "Traceback ..."}}}): "ValueError: ...", and where it was raised,
// "at FILE:LINE in FUNCTION" (the traceback's innermost frame). nullopt when the file is
// missing or not in that form; the summary then shows what it showed before.
struct RecordedError {
  std::string message;
  std::string where;  // empty when the traceback names no frame
};
std::optional<RecordedError> readTorchErrorFile(const std::string& path);

// A RecordedError as one string (for the rendezvous store, from a rank's node to hvdrun).
std::string encodeRecordedError(const RecordedError& error);
RecordedError decodeRecordedError(const std::string& text);

// A private directory (mkdtemp under TMPDIR) for ranks' error files, removed with this
// object. path() is empty when it could not be made: the summary then goes without the
// exception, as before @record support.
class TorchErrorFiles {
 public:
  TorchErrorFiles();
  ~TorchErrorFiles();
  TorchErrorFiles(const TorchErrorFiles&) = delete;
  TorchErrorFiles& operator=(const TorchErrorFiles&) = delete;
  // Rank r's file ("<dir>/rank<r>.json"), or empty without a directory.
  std::string path(int rank) const;
  const std::string& directory() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace hvd::cli
