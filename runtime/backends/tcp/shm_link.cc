// runtime/backends/tcp/shm_link.cc: shm_open + mmap; a single-producer single-consumer byte
// ring with wrap-around copies, and the words a sleeping side waits on.
#include "runtime/backends/tcp/shm_link.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <new>

#include "runtime/backends/tcp/fd_handle.h"
#include "runtime/backends/tcp/wake_word.h"
#include "runtime/common/stream_copy.h"

namespace hvd::backends::tcp {

ShmLink::ShmLink(void* base, size_t length)
    : base_(base), length_(length), capacity_(length - kDataOffset), header_(static_cast<Header*>(base)),
      data_(static_cast<std::byte*>(base) + kDataOffset) {}

ShmLink::ShmLink(ShmLink&& other) noexcept { *this = std::move(other); }

ShmLink& ShmLink::operator=(ShmLink&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, length_);
    base_ = other.base_, length_ = other.length_, capacity_ = other.capacity_, header_ = other.header_, data_ = other.data_;
    other.base_ = nullptr, other.header_ = nullptr, other.data_ = nullptr, other.length_ = 0, other.capacity_ = 0;
  }
  return *this;
}

ShmLink::~ShmLink() {
  if (base_ != nullptr) ::munmap(base_, length_);
}

Result<ShmLink> ShmLink::map(int fd, const std::string& name) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) <= kDataOffset) {
    int error = errno;
    ::close(fd);
    return systemError("sizing up shared memory " + name, error);
  }
  size_t length = static_cast<size_t>(info.st_size);
  // MAP_POPULATE: fault the whole buffer in now, at set-up, rather than a page at a time
  // during the buffer's first round of traffic (measured: about 1 us per KiB, which made 1-16 KiB
  // collectives look 3-10x slower than they are until the buffer had gone round once).
  void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  int error = errno;
  ::close(fd);
  if (base == MAP_FAILED) return systemError("mmap of shared memory " + name, error);
  return ShmLink(base, length);
}

Result<ShmLink> ShmLink::sizeAndMap(int fd, const std::string& name, size_t capacity) {
  if (::ftruncate(fd, static_cast<off_t>(kDataOffset + capacity)) != 0) {
    int error = errno;
    ::close(fd);
    return systemError("sizing shared memory " + name, error);
  }
  // ftruncate reserves nothing: on a full /dev/shm (Docker's 64 MiB) the first write to a
  // page with no room behind it is a SIGBUS. Allocating every page now turns that into
  // ENOSPC here, and the link falls back to TCP.
  if (int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(kDataOffset + capacity)); rc != 0) {
    ::close(fd);
    return Status(rc == ENOSPC ? Errc::kUnavailable : Errc::kSystem,
                  "reserving " + std::to_string((kDataOffset + capacity) >> 10) + " KiB of shared memory for " + name +
                      ": " + std::strerror(rc));
  }
  auto link = map(fd, name);
  if (!link) return link.status();
  // A fresh object is zero-filled; the counters start at 0 either way.
  new (link->header_) Header{};
  return link;
}

Result<ShmLink> ShmLink::create(const std::string& name, size_t capacity) {
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return systemError("shm_open " + name, errno);
  auto link = sizeAndMap(fd, name, capacity);
  if (!link) ::shm_unlink(name.c_str());
  return link;
}

Result<ShmLink> ShmLink::createUnnamed(size_t capacity, int* keepOpen, std::string* handle) {
  int fd = ::memfd_create("hvd-ring", MFD_CLOEXEC);
  if (fd < 0) return Status(Errc::kNotFound, std::string("memfd_create: ") + std::strerror(errno));
  int kept = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  auto offered = kept >= 0 ? fdHandle(kept) : Result<std::string>(systemError("memfd for a ring buffer", errno));
  if (!offered) {
    ::close(fd);
    if (kept >= 0) ::close(kept);
    return offered.status();
  }
  auto link = sizeAndMap(fd, "memfd ring", capacity);
  if (!link) {
    ::close(kept);
    return link.status();
  }
  *keepOpen = kept;
  *handle = std::move(*offered);
  return link;
}

Result<ShmLink> ShmLink::openHandle(const std::string& handle) {
  auto opened = openFdHandle(handle, "the peer's ring buffer");
  if (!opened) return opened.status();
  return map(*opened, handle);
}

Result<ShmLink> ShmLink::open(const std::string& name) {
  int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    return Status(errno == ENOENT ? Errc::kNotFound : Errc::kSystem,
                  "shared memory " + name + " is not on this host: " + std::strerror(errno));
  }
  return map(fd, name);
}

void ShmLink::unlink(const std::string& name) { ::shm_unlink(name.c_str()); }

size_t ShmLink::write(const std::byte* data, size_t size) {
  uint64_t head = header_->head.load(std::memory_order_relaxed);
  uint64_t tail = header_->tail.load(std::memory_order_acquire);
  size_t n = std::min<size_t>({size, capacity_ - static_cast<size_t>(head - tail), kMaxMove});
  if (n == 0) return 0;
  size_t at = static_cast<size_t>(head % capacity_);
  size_t first = std::min(n, capacity_ - at);
  streamCopy(data_ + at, data, first);
  streamCopy(data_, data + first, n - first);
  header_->head.store(head + n, std::memory_order_seq_cst);
  wakeIfAsleep(header_->readerAsleep);
  return n;
}

size_t ShmLink::read(std::byte* data, size_t size) {
  uint64_t tail = header_->tail.load(std::memory_order_relaxed);
  uint64_t head = header_->head.load(std::memory_order_acquire);
  size_t n = std::min<size_t>({size, static_cast<size_t>(head - tail), kMaxMove});
  if (n == 0) return 0;
  size_t at = static_cast<size_t>(tail % capacity_);
  size_t first = std::min(n, capacity_ - at);
  streamCopy(data, data_ + at, first);
  streamCopy(data + first, data_, n - first);
  header_->tail.store(tail + n, std::memory_order_seq_cst);
  wakeIfAsleep(header_->writerAsleep);
  return n;
}

std::atomic<uint32_t>* ShmLink::readerMaySleep() {
  header_->readerAsleep.store(1, std::memory_order_seq_cst);
  if (header_->head.load(std::memory_order_seq_cst) != header_->tail.load(std::memory_order_relaxed)) {
    header_->readerAsleep.store(0, std::memory_order_relaxed);
    return nullptr;
  }
  return &header_->readerAsleep;
}

std::atomic<uint32_t>* ShmLink::writerMaySleep() {
  header_->writerAsleep.store(1, std::memory_order_seq_cst);
  if (header_->head.load(std::memory_order_relaxed) - header_->tail.load(std::memory_order_seq_cst) < capacity_) {
    header_->writerAsleep.store(0, std::memory_order_relaxed);
    return nullptr;
  }
  return &header_->writerAsleep;
}

void ShmLink::readerAwake() { header_->readerAsleep.store(0, std::memory_order_relaxed); }

void ShmLink::writerAwake() { header_->writerAsleep.store(0, std::memory_order_relaxed); }

}  // namespace hvd::backends::tcp

namespace hvd::backends::tcp {

namespace {

// Hands a piece on aligned to `unit`: the buffer's position follows the byte stream, so
// after a message of odd length a piece may start anywhere, and typed code must not read
// a float from an odd address. Misaligned pieces go through an aligned bounce buffer.
void deliver(const std::byte* data, size_t size, size_t unit,
             const std::function<void(std::span<const std::byte>)>& fn) {
  if (reinterpret_cast<uintptr_t>(data) % unit == 0) {
    fn({data, size});
    return;
  }
  alignas(64) static thread_local std::byte bounce[64 * 1024];
  for (size_t done = 0; done < size;) {
    size_t n = std::min(size - done, sizeof bounce);
    streamCopy(bounce, data + done, n);
    fn({bounce, n});
    done += n;
  }
}

}  // namespace

size_t ShmLink::consume(size_t limit, size_t unit, const std::function<void(std::span<const std::byte>)>& fn) {
  uint64_t tail = header_->tail.load(std::memory_order_relaxed);
  uint64_t head = header_->head.load(std::memory_order_acquire);
  size_t n = std::min<size_t>({limit, static_cast<size_t>(head - tail), kMaxMove});
  n -= n % unit;
  if (n == 0) return 0;
  size_t at = static_cast<size_t>(tail % capacity_);
  size_t first = std::min(n, capacity_ - at);
  size_t whole = first - first % unit;
  if (whole > 0) deliver(data_ + at, whole, unit, fn);
  if (whole < n) {
    size_t from = 0;  // where the part after the wrap starts
    if (whole < first) {
      // One unit straddles the end of the buffer: join its two parts.
      alignas(16) std::byte joined[16];
      size_t part = first - whole;
      std::memcpy(joined, data_ + at + whole, part);
      std::memcpy(joined + part, data_, unit - part);
      fn({joined, unit});
      from = unit - part;
      whole += unit;
    }
    if (whole < n) deliver(data_ + from, n - whole, unit, fn);
  }
  header_->tail.store(tail + n, std::memory_order_seq_cst);
  wakeIfAsleep(header_->writerAsleep);
  return n;
}

}  // namespace hvd::backends::tcp
