// Native helpers of @heapless/offheap, through Node-API (node-addon-api, Node-API version 8): one binary per
// platform serves every Node version from 20 on and Bun. scripts/build-native.mjs builds it into
// prebuilds/<platform>-<arch>-<libc>/, which the package ships; the package works without it. Nothing here depends
// on the headers of one Node: the one call Node-API has only as an experimental API is looked up at load
// (node_api_shared.cc).
//
//   checksum(bytes) -> u32
//     The image checksum of a Uint8Array (over an ArrayBuffer or a SharedArrayBuffer): the CRC32C of each 64 KiB
//     chunk (the last one shorter), then the CRC32C of those CRCs as u32 little-endian. Chunks are independent, so
//     they are computed three at a time (the CPU's crc32 instruction has a latency of three cycles and a throughput
//     of one) and, for large inputs, on two threads. The JS fallback computes the same value chunk by chunk
//     (native.ts).
//
//   checksumStart([bytes, ...]) -> job id
//   fileChecksumStart(fd, [offset, length, ...]) -> job id
//   checksumWait(id) -> u32[]
//     The checksums of several byte ranges, or of several ranges of a file, computed on a thread of the job's own;
//     checksumWait joins in on the chunks left and returns them (or throws an Error with .code if a read of the
//     file failed). A file job reads with pread into a 128 KiB buffer of its thread's (the kernel's fast path) and
//     checksums what it read. Every job must be waited for: it holds its byte ranges (and needs its file open)
//     until then. Measured on a 2-core VM for 128 MB: pread + checksum 21-25 ms (plain read() of the same bytes:
//     19-25 ms); touching every page through a mapping instead cost 45-85 ms.
//
//   mapSections(fd, [offset, fileLength, length, ...]) -> SharedArrayBuffer[]
//     Only where the runtime's Node-API can wrap external memory in a SharedArrayBuffer (NodeApiWrapsShared(); on
//     Node 20 heapless_offheap_v8.cc does it through V8, built for that Node's ABI). One SharedArrayBuffer per section of a map image: `length` bytes
//     of private memory whose first `fileLength` bytes map the file at `offset` (mapped_region.h), so nothing is
//     copied into fresh memory at load (reading into fresh anonymous memory cost 300-400 ms for 128 MB: fresh pages
//     fault at ~3.4 us each there). The memory is unmapped when the last SharedArrayBuffer referring to it (in any
//     thread) is collected. Verify the bytes with fileChecksumStart before using them.
//
//   populate([bytes, ...]) -> boolean
//     Makes every page of each Uint8Array's range (rounded out to whole pages) present and private to this process
//     in one madvise(MADV_POPULATE_WRITE) per range (Linux 5.14+): for a mapped image section, the copy of each
//     page that its first write would otherwise make in a page fault of its own. Worth it before many scattered
//     writes (a crash replay): on this project's 2-core VM a page fault cost 15-150 us, while populating 512 MiB
//     took 190-600 ms (1.5-4.5 us a page). False where the kernel has no MADV_POPULATE_WRITE (nothing is lost: the
//     pages then fault as before); throws (with .code) on any other failure.
//
//   helperVersion: the version of this interface (kHelperVersion); the loader (src/persist/native.ts) uses no binary
//   of another.
//
// Node-API version 8: Node 20 and later, and Bun, have it; the headers of whichever Node builds the helper give no
// newer call unless asked.
#define NAPI_VERSION 8
#define NAPI_CPP_EXCEPTIONS
#include <napi.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "mapped_region.h"
#include "node_api_shared.h"

namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr size_t kParallelMin = 8 * 1024 * 1024;

uint32_t table[8][256];

void InitTable() {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++) {
    for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
  }
}

// Raw CRC32C update (no pre/post inversion) in software, slicing by 8.
uint32_t SoftUpdate(uint32_t c, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    w ^= c;
    c = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
        table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
  return c;
}

#if defined(__x86_64__)
bool have_sse42 = false;

__attribute__((target("sse4.2"))) uint32_t HwUpdate(uint32_t c, const uint8_t* p, size_t n) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    c64 = _mm_crc32_u64(c64, w);
    p += 8;
    n -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (n-- > 0) c = _mm_crc32_u8(c, *p++);
  return c;
}

// Three full chunks at once: three independent dependency chains keep the crc32 unit busy every cycle.
__attribute__((target("sse4.2"))) void HwThree(const uint8_t* p, uint32_t* out) {
  uint64_t a = 0xffffffffu, b = 0xffffffffu, c = 0xffffffffu;
  const uint8_t* q = p + kChunk;
  const uint8_t* r = p + 2 * kChunk;
  for (size_t i = 0; i < kChunk; i += 8) {
    uint64_t x, y, z;
    memcpy(&x, p + i, 8);
    memcpy(&y, q + i, 8);
    memcpy(&z, r + i, 8);
    a = _mm_crc32_u64(a, x);
    b = _mm_crc32_u64(b, y);
    c = _mm_crc32_u64(c, z);
  }
  out[0] = ~static_cast<uint32_t>(a);
  out[1] = ~static_cast<uint32_t>(b);
  out[2] = ~static_cast<uint32_t>(c);
}
#endif

uint32_t Crc(const uint8_t* p, size_t n) {
#if defined(__x86_64__)
  if (have_sse42) return ~HwUpdate(0xffffffffu, p, n);
#endif
  return ~SoftUpdate(0xffffffffu, p, n);
}

// CRCs of chunks [from, to) of a range of n bytes into out[from, to); `at` holds the bytes of chunk `from` onwards.
void ChunkCrcs(const uint8_t* at, size_t n, size_t from, size_t to, uint32_t* out) {
  size_t i = from;
#if defined(__x86_64__)
  if (have_sse42) {
    for (; i + 3 <= to && (i + 3) * kChunk <= n; i += 3) HwThree(at + (i - from) * kChunk, out + i);
  }
#endif
  for (; i < to; i++) {
    size_t start = i * kChunk;
    size_t len = n - start < kChunk ? n - start : kChunk;
    out[i] = Crc(at + (i - from) * kChunk, len);
  }
}

// The CRC of the chunk CRCs as u32 little-endian (x86-64 and arm64 hosts are little-endian; the package refuses
// others).
uint32_t CrcOfCrcs(const std::vector<uint32_t>& crcs) {
  return Crc(reinterpret_cast<const uint8_t*>(crcs.data()), crcs.size() * 4);
}

uint32_t ImageChecksum(const uint8_t* p, size_t n) {
  size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<uint32_t> crcs(chunks);
  if (n >= kParallelMin) {
    size_t half = chunks / 2;
    std::thread other(ChunkCrcs, p + half * kChunk, n, half, chunks, crcs.data());
    ChunkCrcs(p, n, 0, half, crcs.data());
    other.join();
  } else {
    ChunkCrcs(p, n, 0, chunks, crcs.data());
  }
  return CrcOfCrcs(crcs);
}

Napi::Error ErrnoError(Napi::Env env, const char* what, int err) {
  Napi::Error e = Napi::Error::New(env, std::string(what) + ": " + strerror(err));
  e.Set("code", Napi::String::New(env, heapless::ErrnoCode(err)));
  return e;
}

// The bytes of a Uint8Array (a Buffer, or a view of an ArrayBuffer or a SharedArrayBuffer); throws a TypeError for
// anything else.
Napi::Uint8Array BytesOf(Napi::Env env, Napi::Value v, const char* usage) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    throw Napi::TypeError::New(env, usage);
  }
  return v.As<Napi::Uint8Array>();
}

// A byte offset or length (heapless::IsSize) from JavaScript; false for anything else.
bool ToSize(Napi::Value v, double* out) {
  if (!v.IsNumber()) return false;
  *out = v.As<Napi::Number>().DoubleValue();
  return heapless::IsSize(*out);
}

struct Range {
  const uint8_t* data;
  size_t length;
  // Where the range is in the job's file; -1 for a range of memory (at `data`).
  int64_t file_offset;
};

// A job: the ranges' chunks in tasks of kTaskChunks (2 MiB), taken in order by the job's thread and, once the owner
// calls checksumWait, by the owner's thread too (it has nothing else to do then). A task of a file range reads its
// bytes into a buffer of the thread's and checksums them there.
constexpr size_t kTaskChunks = 32;
// Chunks read at a time: 128 KiB stays in the L2 cache between the kernel's copy and the checksum (measured: 21 ms
// for 128 MB against 25 ms in 1 MiB reads and 30 ms in 2 MiB reads).
constexpr size_t kReadChunks = 2;

struct Task {
  size_t range;
  size_t from;
  size_t to;
};

class Job {
 public:
  // The ranges of a memory job stay alive through `holds` (references to their views) until the job is destroyed,
  // which only happens on the JavaScript thread that started it.
  Job(std::vector<Range> ranges, std::vector<Napi::ObjectReference> holds, int fd)
      : ranges_(std::move(ranges)), holds_(std::move(holds)), fd_(fd) {
    for (size_t r = 0; r < ranges_.size(); r++) {
      size_t chunks = (ranges_[r].length + kChunk - 1) / kChunk;
      crcs_.emplace_back(chunks);
      for (size_t c = 0; c < chunks; c += kTaskChunks) tasks_.push_back({r, c, std::min(chunks, c + kTaskChunks)});
    }
    thread_ = std::thread([this]() { Work(); });
  }

  ~Job() { Cancel(); }

  // Works on the tasks left, waits for the job's thread and returns the ranges' checksums; the first read error
  // (errno) instead if any.
  int Finish(std::vector<uint32_t>* sums) {
    Work();
    thread_.join();
    if (error_ != 0) return error_;
    for (const auto& crcs : crcs_) sums->push_back(CrcOfCrcs(crcs));
    return 0;
  }

  // Stops handing out tasks and waits for the job's thread (an environment shutting down).
  void Cancel() {
    cancelled_ = true;
    if (thread_.joinable()) thread_.join();
  }

  // For an environment torn down past the point where references may be deleted.
  void Abandon() {
    Cancel();
    for (auto& h : holds_) h.SuppressDestruct();
  }

 private:
  void Work() {
    std::unique_ptr<uint8_t[]> buffer;  // file bytes of a piece of a task, reused so they stay in the L2 cache
    for (size_t t = next_.fetch_add(1); t < tasks_.size() && !cancelled_; t = next_.fetch_add(1)) {
      const Task& k = tasks_[t];
      const Range& r = ranges_[k.range];
      uint32_t* out = crcs_[k.range].data();
      if (r.file_offset < 0) {
        ChunkCrcs(r.data + k.from * kChunk, r.length, k.from, k.to, out);
        continue;
      }
      if (buffer == nullptr) buffer.reset(new uint8_t[kReadChunks * kChunk]);
      for (size_t from = k.from; from < k.to; from += kReadChunks) {
        size_t to = std::min(k.to, from + kReadChunks);
        if (!Read(r, from, to, buffer.get())) break;
        ChunkCrcs(buffer.get(), r.length, from, to, out);
      }
    }
  }

  // Reads chunks [from, to) of a file range into `into`; false (error_ set: errno, or EIO for a file shorter than
  // the range) if it cannot.
  bool Read(const Range& r, size_t from, size_t to, uint8_t* into) {
    size_t start = from * kChunk;
    size_t end = std::min(r.length, to * kChunk);
    for (size_t done = 0; start + done < end;) {
      ssize_t n = pread(fd_, into + done, end - start - done, static_cast<off_t>(r.file_offset + start + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int expected = 0;
        error_.compare_exchange_strong(expected, n < 0 ? errno : EIO);
        return false;
      }
      done += static_cast<size_t>(n);
    }
    return true;
  }

  std::vector<Range> ranges_;
  std::vector<Napi::ObjectReference> holds_;
  int fd_;
  std::vector<std::vector<uint32_t>> crcs_;
  std::vector<Task> tasks_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> cancelled_{false};
  std::atomic<int> error_{0};
  std::thread thread_;
};

void ReleaseRegion(void* data, void* hint) {
  (void)data;
  heapless::FreeRegion(static_cast<heapless::Region*>(hint));
}

// One instance per JavaScript environment (the main thread and each worker thread that loads the helper): its jobs
// are the ones that environment started.
class Helpers : public Napi::Addon<Helpers> {
 public:
  Helpers(Napi::Env env, Napi::Object exports) {
    static std::once_flag once;
    std::call_once(once, []() {
      InitTable();
#if defined(__x86_64__)
      __builtin_cpu_init();
      have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
    });
    DefineAddon(exports, {
                             InstanceMethod("checksum", &Helpers::Checksum, napi_enumerable),
                             InstanceMethod("checksumStart", &Helpers::ChecksumStart, napi_enumerable),
                             InstanceMethod("fileChecksumStart", &Helpers::FileChecksumStart, napi_enumerable),
                             InstanceMethod("checksumWait", &Helpers::ChecksumWait, napi_enumerable),
                             InstanceMethod("populate", &Helpers::Populate, napi_enumerable),
                             InstanceValue("helperVersion", Napi::Number::New(env, heapless::kHelperVersion), napi_enumerable),
                         });
    if (heapless::NodeApiWrapsShared()) {
      DefineProperties(exports, {InstanceMethod("mapSections", &Helpers::MapSections, napi_enumerable)});
    }
    // Runs before the environment's references are torn down (cleanup hooks run last registered first, and
    // Node-API's own was registered before this module's initialisation): jobs a worker left behind end here.
    cleanup_ = env.AddCleanupHook(&Helpers::EndJobs, this);
  }

  ~Helpers() {
    if (cleanup_.IsEmpty()) return;
    // The environment is going and the cleanup hook has not run: its references can no longer be deleted.
    for (auto& job : jobs_) {
      if (job != nullptr) job->Abandon();
    }
  }

 private:
  Napi::Value Checksum(const Napi::CallbackInfo& info) {
    Napi::Uint8Array bytes = BytesOf(info.Env(), info[0], "checksum(bytes: Uint8Array)");
    return Napi::Number::New(info.Env(), ImageChecksum(bytes.Data(), bytes.ByteLength()));
  }

  Napi::Value ChecksumStart(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const char* usage = "checksumStart(ranges: Uint8Array[])";
    if (!info[0].IsArray()) throw Napi::TypeError::New(env, usage);
    Napi::Array list = info[0].As<Napi::Array>();
    std::vector<Range> ranges;
    std::vector<Napi::ObjectReference> holds;
    for (uint32_t i = 0; i < list.Length(); i++) {
      Napi::Uint8Array bytes = BytesOf(env, list.Get(i), usage);
      ranges.push_back({bytes.Data(), bytes.ByteLength(), -1});
      holds.push_back(Napi::Persistent(static_cast<Napi::Object>(bytes)));
    }
    return AddJob(env, std::make_unique<Job>(std::move(ranges), std::move(holds), -1));
  }

  Napi::Value FileChecksumStart(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const char* usage = "fileChecksumStart(fd, [offset, length, ...])";
    if (!info[0].IsNumber() || !info[1].IsArray()) throw Napi::TypeError::New(env, usage);
    int fd = info[0].As<Napi::Number>().Int32Value();
    Napi::Array list = info[1].As<Napi::Array>();
    std::vector<Range> ranges;
    for (uint32_t i = 0; i + 1 < list.Length(); i += 2) {
      double offset, length;
      if (!ToSize(list.Get(i), &offset) || !ToSize(list.Get(i + 1), &length)) throw ErrnoError(env, usage, EINVAL);
      ranges.push_back({nullptr, static_cast<size_t>(length), static_cast<int64_t>(offset)});
    }
    return AddJob(env, std::make_unique<Job>(std::move(ranges), std::vector<Napi::ObjectReference>(), fd));
  }

  Napi::Value ChecksumWait(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    uint32_t id = info[0].IsNumber() ? info[0].As<Napi::Number>().Uint32Value() : UINT32_MAX;
    if (id >= jobs_.size() || jobs_[id] == nullptr) throw Napi::RangeError::New(env, "no such checksum job");
    std::unique_ptr<Job> job = std::move(jobs_[id]);
    std::vector<uint32_t> sums;
    int err = job->Finish(&sums);
    if (err != 0) throw ErrnoError(env, "reading the map image", err);
    Napi::Array out = Napi::Array::New(env, sums.size());
    for (uint32_t i = 0; i < sums.size(); i++) out.Set(i, Napi::Number::New(env, sums[i]));
    return out;
  }

  Napi::Value Populate(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const char* usage = "populate(ranges: Uint8Array[])";
    if (!info[0].IsArray()) throw Napi::TypeError::New(env, usage);
    Napi::Array list = info[0].As<Napi::Array>();
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    for (uint32_t i = 0; i < list.Length(); i++) {
      Napi::Uint8Array bytes = BytesOf(env, list.Get(i), usage);
      if (bytes.ByteLength() == 0) continue;
      uintptr_t start = reinterpret_cast<uintptr_t>(bytes.Data()) & ~(page - 1);
      uintptr_t end = (reinterpret_cast<uintptr_t>(bytes.Data()) + bytes.ByteLength() + page - 1) & ~(page - 1);
      if (madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_WRITE) != 0) {
        if (errno == EINVAL) return Napi::Boolean::New(env, false);
        throw ErrnoError(env, "madvise(MADV_POPULATE_WRITE)", errno);
      }
    }
    return Napi::Boolean::New(env, true);
  }

  Napi::Value MapSections(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const char* usage = "mapSections(fd, [offset, fileLength, length, ...])";
    if (!info[0].IsNumber() || !info[1].IsArray()) throw Napi::TypeError::New(env, usage);
    int fd = info[0].As<Napi::Number>().Int32Value();
    Napi::Array list = info[1].As<Napi::Array>();
    Napi::Array out = Napi::Array::New(env, list.Length() / 3);
    for (uint32_t i = 0; i + 2 < list.Length(); i += 3) {
      double n[3];
      for (uint32_t k = 0; k < 3; k++) {
        Napi::Value v = list.Get(i + k);
        n[k] = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
      }
      if (!heapless::ValidSection(n[0], n[1], n[2])) throw ErrnoError(env, "mapSections", EINVAL);
      heapless::Region* region =
          heapless::MapRegion(fd, static_cast<off_t>(n[0]), static_cast<size_t>(n[1]), static_cast<size_t>(n[2]));
      if (region == nullptr) throw ErrnoError(env, "mmap", errno);
      napi_value sab;
      napi_status status = heapless::WrapShared(env, region->raw, region->length, ReleaseRegion, region, &sab);
      if (status != napi_ok) {
        heapless::FreeRegion(region);
        NAPI_THROW_IF_FAILED(env, status, Napi::Value());
      }
      out.Set(i / 3, Napi::Value(env, sab));
    }
    return out;
  }

  Napi::Value AddJob(Napi::Env env, std::unique_ptr<Job> job) {
    size_t id = 0;
    while (id < jobs_.size() && jobs_[id] != nullptr) id++;
    if (id == jobs_.size()) jobs_.emplace_back();
    jobs_[id] = std::move(job);
    return Napi::Number::New(env, static_cast<double>(id));
  }

  static void EndJobs(Helpers* self) {
    self->jobs_.clear();
    self->cleanup_ = {};
  }

  std::vector<std::unique_ptr<Job>> jobs_;
  Napi::Env::CleanupHook<void (*)(Helpers*), Helpers> cleanup_;
};

}  // namespace

NODE_API_ADDON(Helpers)
