// Memory of a map image section, shared by the two bindings that wrap it in a SharedArrayBuffer (Node-API in
// heapless_offheap.cc, V8 itself in heapless_offheap_v8.cc): `length` bytes of private memory whose first
// `file_length` bytes map the file at `offset` (page cache pages until written, then copied a page at a time), the
// rest zero pages. Nothing here touches JavaScript.
#ifndef HEAPLESS_OFFHEAP_MAPPED_REGION_H_
#define HEAPLESS_OFFHEAP_MAPPED_REGION_H_

#include <cerrno>
#include <cmath>
#include <cstddef>

#include <sys/mman.h>
#include <sys/types.h>

namespace heapless {

// The version of the bindings' interface, their export helperVersion: changed whenever an export changes, together
// with HELPER_VERSION in src/persist/native.ts, which uses no binary of another.
constexpr int kHelperVersion = 2;

struct Region {
  void* raw;
  size_t length;
};

// Whether a JavaScript number is a byte offset or length the helper takes: an integer in [0, 1e15] (exact in a
// double, and far beyond any file or memory here). NaN fails every comparison.
inline bool IsSize(double d) { return d >= 0 && d <= 1e15 && d == std::floor(d); }

// Whether [offset, fileLength, length] (JavaScript numbers) describe a section that can be mapped: sizes, a
// non-empty section, its file part no longer than the section.
inline bool ValidSection(double offset, double file_length, double length) {
  return IsSize(offset) && IsSize(file_length) && IsSize(length) && length > 0 && file_length <= length;
}

// The mapped region, or nullptr with errno set. The caller owns it until it hands it to FreeRegion.
inline Region* MapRegion(int fd, off_t offset, size_t file_length, size_t length) {
  void* raw = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  if (file_length > 0 &&
      mmap(raw, file_length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, offset) == MAP_FAILED) {
    int err = errno;
    munmap(raw, length);
    errno = err;
    return nullptr;
  }
  return new Region{raw, length};
}

// Unmaps a region: the release callback of the SharedArrayBuffer over it, run once no thread refers to the buffer
// (on whichever thread dropped the last reference).
inline void FreeRegion(Region* r) {
  munmap(r->raw, r->length);
  delete r;
}

// The Node.js error code for an errno of mmap or pread.
inline const char* ErrnoCode(int err) {
  switch (err) {
    case ENOMEM:
      return "ENOMEM";
    case EINVAL:
      return "EINVAL";
    case EBADF:
      return "EBADF";
    case EACCES:
      return "EACCES";
    default:
      return "EIO";
  }
}

}  // namespace heapless

#endif  // HEAPLESS_OFFHEAP_MAPPED_REGION_H_
