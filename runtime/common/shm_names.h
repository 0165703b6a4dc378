// runtime/common/shm_names.h: the names of a job's shared-memory objects. Every one starts
// with shmJobPrefix(secret), and only hvdrun (who made the job's secret) and the ranks know
// it: hvdrun and its guardian remove what ranks killed in the middle of set-up leave in
// /dev/shm, without touching another job's objects.
#pragma once

#include <string>
#include <string_view>

namespace hvd {

// "hvd-" and 16 hex digits of an HMAC of the secret, then "-": a /dev/shm entry's name
// (shm_open's names are this with a leading '/').
std::string shmJobPrefix(std::string_view secret);

// Removes every /dev/shm entry whose name starts with prefix; returns how many. Best
// effort: an entry another process removed meanwhile is not an error.
int removeShmObjects(std::string_view prefix);

}  // namespace hvd
