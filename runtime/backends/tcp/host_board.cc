// runtime/backends/tcp/host_board.cc: one shared page per host (HostBoard::Page).
#include "runtime/backends/tcp/host_board.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <new>

#include "runtime/backends/tcp/fd_handle.h"
#include "runtime/common/log.h"

namespace hvd::backends::tcp {
namespace {

constexpr size_t kPage = 4096;

std::string boardKey(int rank) { return "hvd.board/" + std::to_string(rank); }

size_t wholePages(size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

// Maps `bytes` of `fd`; the descriptor stays the caller's.
Result<void*> mapBoard(int fd, size_t bytes) {
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return systemError("mmap of the host board", errno);
  return base;
}

}  // namespace

void HostBoard::FreeAligned::operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(kPage)); }

std::shared_ptr<HostBoard> HostBoard::inProcess(size_t arenaBytes) {
  std::shared_ptr<HostBoard> board(new HostBoard());
  board->own_ = std::make_unique<Page>();
  board->page_ = board->own_.get();
  if (arenaBytes > 0) {
    arenaBytes = wholePages(arenaBytes);
    board->ownArena_.reset(new (std::align_val_t(kPage)) std::byte[arenaBytes]());
    board->arena_ = {board->ownArena_.get(), arenaBytes};
  }
  return board;
}

Result<std::shared_ptr<HostBoard>> HostBoard::create(std::string* handle, size_t arenaBytes) {
  static_assert(sizeof(Page) <= kPage);
  const size_t bytes = kPage + wholePages(arenaBytes);
  int fd = ::memfd_create("hvd-board", MFD_CLOEXEC);
  if (fd < 0) return systemError("memfd_create for the host board", errno);
  // Reserved now, as for ring buffers (shm_link.cc): a full memory cgroup fails here, not
  // with a SIGBUS at the first count.
  const off_t size = static_cast<off_t>(bytes);
  if (::ftruncate(fd, size) != 0 || ::posix_fallocate(fd, 0, size) != 0) {
    ::close(fd);
    return Status(Errc::kUnavailable, "no room for the host board's " + std::to_string(bytes >> 10) + " KiB");
  }
  auto page = mapBoard(fd, bytes);
  auto offered = page ? fdHandle(fd) : Result<std::string>(page.status());
  if (!offered) {
    if (page) ::munmap(*page, bytes);
    ::close(fd);
    return offered.status();
  }
  std::shared_ptr<HostBoard> board(new HostBoard());
  board->mapping_ = *page;
  board->mapped_ = bytes;
  board->arena_ = {static_cast<std::byte*>(*page) + kPage, bytes - kPage};
  board->page_ = new (*page) Page();
  board->offered_ = fd;  // open while the board lives: the handle names it
  *handle = std::move(*offered);
  return board;
}

Result<std::shared_ptr<HostBoard>> HostBoard::open(const std::string& handle) {
  auto fd = openFdHandle(handle, "the host board");
  if (!fd) return fd.status();
  struct stat st {};
  if (::fstat(*fd, &st) != 0 || st.st_size < static_cast<off_t>(kPage)) {
    ::close(*fd);
    return Status(Errc::kNotFound, "the host board's handle names a file smaller than its page");
  }
  const size_t bytes = static_cast<size_t>(st.st_size);
  auto page = mapBoard(*fd, bytes);
  ::close(*fd);  // the mapping keeps the memfd
  if (!page) return page.status();
  std::shared_ptr<HostBoard> board(new HostBoard());
  board->mapping_ = *page;
  board->mapped_ = bytes;
  board->arena_ = {static_cast<std::byte*>(*page) + kPage, bytes - kPage};
  // The maker constructed the page before it offered the handle.
  board->page_ = static_cast<Page*>(*page);
  return board;
}

HostBoard::~HostBoard() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapped_);
  if (offered_ >= 0) ::close(offered_);
}

void HostBoard::join(const std::vector<int>& cpus, std::optional<int> quotaCores) {
  bool known = !cpus.empty();
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= kCpus) {
      known = false;
      continue;
    }
    page_->cpus[cpu / 64].fetch_or(uint64_t{1} << (cpu % 64), std::memory_order_relaxed);
  }
  if (!known) page_->unknown.fetch_add(1, std::memory_order_relaxed);
  if (quotaCores && *quotaCores > 0) {
    int seen = page_->quotaCores.load(std::memory_order_relaxed);
    while ((seen == 0 || *quotaCores < seen) &&
           !page_->quotaCores.compare_exchange_weak(seen, *quotaCores, std::memory_order_relaxed)) {
    }
  }
  // Last, and releasing: a rank that counts every one joined sees all they wrote.
  page_->joined.fetch_add(1, std::memory_order_release);
}

std::optional<int> HostBoard::ranksCores(int localSize) const {
  if (page_->joined.load(std::memory_order_acquire) < localSize) return std::nullopt;
  if (page_->unknown.load(std::memory_order_relaxed) > 0) return std::nullopt;
  int cores = 0;
  for (const auto& word : page_->cpus) cores += std::popcount(word.load(std::memory_order_relaxed));
  if (int quota = page_->quotaCores.load(std::memory_order_relaxed); quota > 0) cores = std::min(cores, quota);
  return cores;
}

std::optional<bool> HostBoard::cpuShared(int localRank, int localSize) const {
  if (localRank < 0 || localRank >= kSeats) return std::nullopt;
  const int mine = page_->lastCpu[localRank].load(std::memory_order_relaxed);
  if (mine == 0) return std::nullopt;
  for (int other = 0; other < std::min(localSize, kSeats); ++other) {
    if (other != localRank && page_->lastCpu[other].load(std::memory_order_relaxed) == mine) return true;
  }
  return false;
}

Result<std::shared_ptr<HostBoard>> offerHostBoard(Store& store, const BoardPlace& place, size_t arenaBytes) {
  const std::string where = std::to_string(place.crossRank) + " " + std::to_string(place.localRank) + " ";
  if (place.localRank != 0 || place.localSize < 2) {
    // Every rank publishes, one alone on its host too: under placement other than block, the
    // rank another one takes for its local rank 0 answers at once that it is not. (An elastic
    // job's rank added beside a running one took the next host's only rank for it, which said
    // nothing: it waited the whole timeout, its peers in the ring for it, and all failed.)
    HVD_RETURN_IF_ERROR(store.set(boardKey(place.rank), where + "-"));
    return std::shared_ptr<HostBoard>();
  }
  std::string handle;
  auto board = HostBoard::create(&handle, arenaBytes);
  if (!board) logMessage(LogLevel::kDebug, "no host board: " + board.status().message());
  HVD_RETURN_IF_ERROR(store.set(boardKey(place.rank), where + (board ? handle : "-")));
  return board ? *board : std::shared_ptr<HostBoard>();
}

Result<std::shared_ptr<HostBoard>> joinHostBoard(Store& store, const BoardPlace& place,
                                                 std::chrono::milliseconds timeout) {
  if (place.localRank == 0 || place.localSize < 2) return std::shared_ptr<HostBoard>();
  const int first = place.rank - place.localRank;
  if (first < 0) {
    return Status(Errc::kNotFound,
                  "local rank " + std::to_string(place.localRank) + " is above rank " + std::to_string(place.rank));
  }
  auto offer = store.get(boardKey(first), timeout);
  if (!offer) return offer.status().withContext("reading local rank 0's host board");
  const std::string where = std::to_string(place.crossRank) + " 0 ";
  if (offer->rfind(where, 0) != 0) {
    return Status(Errc::kNotFound, "rank " + std::to_string(first) + " is not local rank 0 of host " +
                                       std::to_string(place.crossRank) + " (placement other than block)");
  }
  std::string handle = offer->substr(where.size());
  if (handle == "-") return Status(Errc::kUnavailable, "local rank 0 could not make the host board");
  return HostBoard::open(handle);
}

}  // namespace hvd::backends::tcp
