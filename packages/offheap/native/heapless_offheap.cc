// Native helpers of @heapless/offheap, loaded when they could be built (the package works without them):
//
//   loadSections(fd, [offset, fileLength, length, ...]) -> [jobId, buffer0, buffer1, ...]
//     One SharedArrayBuffer per section of a map image: `length` bytes of private memory whose first `fileLength`
//     bytes map the file at `offset` (page-aligned; the rest is zero pages). Mapped pages are the page cache's until
//     written (then copied, a page at a time), so nothing is copied into fresh memory at load. The job verifies the
//     sections by reading the file (pread into a 128 KiB buffer of its thread's, the kernel's fast path) and
//     checksumming what it read, on a thread of its own so the caller can open the engine meanwhile;
//     checksumWait(jobId) joins in and returns the sections' checksums. Measured on a 2-core VM for 128 MB: pread +
//     checksum 21-25 ms (plain read() of the same bytes: 19-25 ms); touching every page through a mapping instead
//     cost 45-85 ms, and reading into fresh anonymous memory 300-400 ms (fresh pages fault at ~3.4 µs each there).
//     The memory is unmapped when the last SharedArrayBuffer referring to it (in any thread) is collected.
//
//   checksum(buffer, offset, length) -> u32
//     The image checksum of buffer[offset, offset + length) (an ArrayBuffer, SharedArrayBuffer or a view of one):
//     the CRC32C of each 64 KiB chunk (the last one shorter), then the CRC32C of those CRCs as u32 little-endian.
//     Chunks are independent, so they are computed three at a time (the CPU's crc32 instruction has a latency of
//     three cycles and a throughput of one) and, for large inputs, on two threads. The JS fallback computes the
//     same value chunk by chunk (native.ts).
//
//   checksumStart([buffer, offset, length, ...]) -> job id;  checksumWait(id) -> u32[]
//     The checksums of several ranges computed on a thread of their own; checksumWait joins in on the chunks left
//     and returns them (or throws an Error with .code if a read of a loadSections job failed). Every job must be
//     waited for; it holds the buffers' memory until then.
#include <node.h>
#include <v8.h>

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

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

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

// CRCs of chunks [from, to) of p[0, n) into out[from, to).
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
  // The CRCs as u32 little-endian (x86-64 and arm64 hosts are little-endian; the package refuses others).
  return Crc(reinterpret_cast<const uint8_t*>(crcs.data()), chunks * 4);
}

void ThrowErrno(v8::Isolate* isolate, const char* what, int err) {
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  std::string message = std::string(what) + ": " + strerror(err);
  v8::Local<v8::Value> e = v8::Exception::Error(v8::String::NewFromUtf8(isolate, message.c_str()).ToLocalChecked());
  const char* code = err == ENOMEM ? "ENOMEM" : err == EINVAL ? "EINVAL" : err == EBADF ? "EBADF" : err == EACCES ? "EACCES" : "EIO";
  e.As<v8::Object>()
      ->Set(context, v8::String::NewFromUtf8Literal(isolate, "code"), v8::String::NewFromUtf8(isolate, code).ToLocalChecked())
      .Check();
  isolate->ThrowException(e);
}

// Memory of loadSections: a private mapping (file over its start, zero pages after).
struct Region {
  void* raw;
  size_t length;
};

void FreeRegion(void* data, size_t length, void* deleter_data) {
  Region* r = static_cast<Region*>(deleter_data);
  munmap(r->raw, r->length);
  delete r;
}

// `length` bytes of private memory whose first `file_length` bytes are a private mapping of the file at `offset`
// (page cache pages until written, copied then), the rest zero; or nullptr (errno set).
uint8_t* MapRegion(int fd, off_t offset, size_t file_length, size_t length, Region** region) {
  void* raw = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  if (file_length > 0 &&
      mmap(raw, file_length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, offset) == MAP_FAILED) {
    int err = errno;
    munmap(raw, length);
    errno = err;
    return nullptr;
  }
  *region = new Region{raw, length};
  return static_cast<uint8_t*>(raw);
}

struct Range {
  uint8_t* data;
  size_t length;
  // Where loadSections reads the range from (-1: the range is only checksummed).
  int64_t file_offset = -1;
  // Keeps the memory alive while a checksum thread reads it, even if JS drops every reference.
  std::shared_ptr<v8::BackingStore> store;
};

// The bytes [offset, offset + length) of an ArrayBuffer, SharedArrayBuffer or view (length undefined: to the
// end). False, with a JS exception thrown, if the value or the range is not valid.
bool ToRange(v8::Isolate* isolate, v8::Local<v8::Value> buffer, v8::Local<v8::Value> offsetArg,
             v8::Local<v8::Value> lengthArg, Range* out) {
  const uint8_t* base = nullptr;
  size_t size = 0;
  if (buffer->IsSharedArrayBuffer()) {
    out->store = buffer.As<v8::SharedArrayBuffer>()->GetBackingStore();
    base = static_cast<const uint8_t*>(out->store->Data());
    size = out->store->ByteLength();
  } else if (buffer->IsArrayBuffer()) {
    out->store = buffer.As<v8::ArrayBuffer>()->GetBackingStore();
    base = static_cast<const uint8_t*>(out->store->Data());
    size = out->store->ByteLength();
  } else if (buffer->IsArrayBufferView()) {
    auto v = buffer.As<v8::ArrayBufferView>();
    out->store = v->Buffer()->GetBackingStore();
    base = static_cast<const uint8_t*>(out->store->Data()) + v->ByteOffset();
    size = v->ByteLength();
  } else {
    isolate->ThrowException(v8::Exception::TypeError(
        v8::String::NewFromUtf8Literal(isolate, "checksum needs an ArrayBuffer, SharedArrayBuffer or view")));
    return false;
  }
  double offset = offsetArg->IsNumber() ? offsetArg.As<v8::Number>()->Value() : 0;
  double length = lengthArg->IsNumber() ? lengthArg.As<v8::Number>()->Value() : static_cast<double>(size) - offset;
  if (!(offset >= 0) || !(length >= 0) || offset + length > static_cast<double>(size)) {
    isolate->ThrowException(v8::Exception::RangeError(v8::String::NewFromUtf8Literal(isolate, "checksum range")));
    return false;
  }
  out->data = const_cast<uint8_t*>(base) + static_cast<size_t>(offset);
  out->length = static_cast<size_t>(length);
  return true;
}

void Checksum(const v8::FunctionCallbackInfo<v8::Value>& args) {
  v8::Isolate* isolate = args.GetIsolate();
  Range r;
  if (!ToRange(isolate, args[0], args[1], args[2], &r)) return;
  args.GetReturnValue().Set(v8::Integer::NewFromUnsigned(isolate, ImageChecksum(r.data, r.length)));
}

// A job: the ranges' chunks in tasks of kTaskChunks (2 MiB), taken in order by the job's thread and, once the owner
// calls checksumWait, by the owner's thread too (it has nothing else to do then). A loadSections task reads its bytes
// from the file into a buffer of the thread's and checksums them there.
constexpr size_t kTaskChunks = 32;
// Chunks read at a time: 128 KiB stays in the L2 cache between the kernel's copy and the checksum (measured: 21 ms
// for 128 MB against 25 ms in 1 MiB reads and 30 ms in 2 MiB reads).
constexpr size_t kReadChunks = 2;

struct Task {
  size_t range;
  size_t from;
  size_t to;
};

struct Job {
  std::vector<Range> ranges;
  std::vector<std::vector<uint32_t>> crcs;
  std::vector<Task> tasks;
  std::atomic<size_t> next{0};
  std::thread thread;
  int fd = -1;
  // The first read error (errno; EIO also for a file shorter than its header says), 0 if none.
  std::atomic<int> error{0};

  void Work() {
    std::unique_ptr<uint8_t[]> buffer;  // file bytes of a piece of a task, reused so they stay in the L2 cache
    for (size_t t = next.fetch_add(1); t < tasks.size(); t = next.fetch_add(1)) {
      const Task& k = tasks[t];
      const Range& r = ranges[k.range];
      uint32_t* out = crcs[k.range].data();
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

  // Reads chunks [from, to) of the range from the file into `into`.
  bool Read(const Range& r, size_t from, size_t to, uint8_t* into) {
    size_t start = from * kChunk;
    size_t end = std::min(r.length, to * kChunk);
    for (size_t done = 0; start + done < end;) {
      ssize_t n = pread(fd, into + done, end - start - done, static_cast<off_t>(r.file_offset + start + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int expected = 0;
        error.compare_exchange_strong(expected, n < 0 ? errno : EIO);
        return false;
      }
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Splits the ranges into tasks and starts the job's thread.
  void Start() {
    for (size_t r = 0; r < ranges.size(); r++) {
      size_t chunks = (ranges[r].length + kChunk - 1) / kChunk;
      crcs.emplace_back(chunks);
      for (size_t c = 0; c < chunks; c += kTaskChunks) tasks.push_back({r, c, std::min(chunks, c + kTaskChunks)});
    }
    thread = std::thread([this]() { Work(); });
  }
};

// Jobs by id, for every thread of the process that loaded the addon (maps may be opened in worker threads).
std::mutex jobs_mutex;
std::vector<std::unique_ptr<Job>> jobs;

uint32_t AddJob(std::unique_ptr<Job> job) {
  std::lock_guard<std::mutex> lock(jobs_mutex);
  size_t id = 0;
  while (id < jobs.size() && jobs[id] != nullptr) id++;
  if (id == jobs.size()) jobs.emplace_back();
  jobs[id] = std::move(job);
  return static_cast<uint32_t>(id);
}

void ChecksumStart(const v8::FunctionCallbackInfo<v8::Value>& args) {
  v8::Isolate* isolate = args.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  if (args.Length() < 1 || !args[0]->IsArray()) {
    isolate->ThrowException(
        v8::Exception::TypeError(v8::String::NewFromUtf8Literal(isolate, "checksumStart([buffer, offset, length, ...])")));
    return;
  }
  auto list = args[0].As<v8::Array>();
  auto job = std::make_unique<Job>();
  for (uint32_t i = 0; i + 2 < list->Length(); i += 3) {
    Range r;
    if (!ToRange(isolate, list->Get(context, i).ToLocalChecked(), list->Get(context, i + 1).ToLocalChecked(),
                 list->Get(context, i + 2).ToLocalChecked(), &r)) {
      return;
    }
    job->ranges.push_back(r);
  }
  job->Start();
  args.GetReturnValue().Set(v8::Integer::NewFromUnsigned(isolate, AddJob(std::move(job))));
}

void LoadSections(const v8::FunctionCallbackInfo<v8::Value>& args) {
  v8::Isolate* isolate = args.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  if (args.Length() < 2 || !args[0]->IsInt32() || !args[1]->IsArray()) {
    isolate->ThrowException(v8::Exception::TypeError(
        v8::String::NewFromUtf8Literal(isolate, "loadSections(fd, [offset, fileLength, length, ...])")));
    return;
  }
  auto list = args[1].As<v8::Array>();
  auto job = std::make_unique<Job>();
  job->fd = args[0].As<v8::Int32>()->Value();
  v8::Local<v8::Array> out = v8::Array::New(isolate, 1 + static_cast<int>(list->Length() / 3));
  for (uint32_t i = 0; i + 2 < list->Length(); i += 3) {
    double n[3];
    for (uint32_t k = 0; k < 3; k++) {
      v8::Local<v8::Value> v = list->Get(context, i + k).ToLocalChecked();
      n[k] = v->IsNumber() ? v.As<v8::Number>()->Value() : -1;
    }
    if (!(n[0] >= 0) || !(n[1] >= 0) || !(n[2] > 0) || n[1] > n[2] || n[2] > 1e15) {
      ThrowErrno(isolate, "loadSections", EINVAL);
      return;
    }
    Region* region = nullptr;
    uint8_t* p = MapRegion(job->fd, static_cast<off_t>(n[0]), static_cast<size_t>(n[1]), static_cast<size_t>(n[2]), &region);
    if (p == nullptr) {
      ThrowErrno(isolate, "mmap", errno);
      return;
    }
    std::shared_ptr<v8::BackingStore> store =
        v8::SharedArrayBuffer::NewBackingStore(p, static_cast<size_t>(n[2]), FreeRegion, region);
    out->Set(context, 1 + i / 3, v8::SharedArrayBuffer::New(isolate, store)).Check();
    job->ranges.push_back({p, static_cast<size_t>(n[1]), static_cast<int64_t>(n[0]), store});
  }
  job->Start();
  out->Set(context, 0, v8::Integer::NewFromUnsigned(isolate, AddJob(std::move(job)))).Check();
  args.GetReturnValue().Set(out);
}

void ChecksumWait(const v8::FunctionCallbackInfo<v8::Value>& args) {
  v8::Isolate* isolate = args.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  uint32_t id = args.Length() >= 1 && args[0]->IsUint32() ? args[0].As<v8::Uint32>()->Value() : UINT32_MAX;
  std::unique_ptr<Job> job;
  {
    std::lock_guard<std::mutex> lock(jobs_mutex);
    if (id < jobs.size()) job = std::move(jobs[id]);
  }
  if (job == nullptr) {
    isolate->ThrowException(v8::Exception::RangeError(v8::String::NewFromUtf8Literal(isolate, "no such checksum job")));
    return;
  }
  job->Work();
  job->thread.join();
  if (job->error != 0) {
    ThrowErrno(isolate, "reading the map image", job->error);
    return;
  }
  v8::Local<v8::Array> out = v8::Array::New(isolate, static_cast<int>(job->ranges.size()));
  for (size_t i = 0; i < job->ranges.size(); i++) {
    const std::vector<uint32_t>& crcs = job->crcs[i];
    uint32_t c = Crc(reinterpret_cast<const uint8_t*>(crcs.data()), crcs.size() * 4);
    out->Set(context, static_cast<uint32_t>(i), v8::Integer::NewFromUnsigned(isolate, c)).Check();
  }
  args.GetReturnValue().Set(out);
}

}  // namespace

NODE_MODULE_INIT(/* exports, module, context */) {
  // Once per process: every thread that loads the addon runs this.
  static std::once_flag once;
  std::call_once(once, []() {
    InitTable();
#if defined(__x86_64__)
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
  });
  v8::Isolate* isolate = context->GetIsolate();
  const std::pair<const char*, v8::FunctionCallback> functions[] = {
      {"loadSections", LoadSections}, {"checksum", Checksum}, {"checksumStart", ChecksumStart}, {"checksumWait", ChecksumWait}};
  for (const auto& [name, fn] : functions) {
    exports
        ->Set(context, v8::String::NewFromUtf8(isolate, name).ToLocalChecked(),
              v8::FunctionTemplate::New(isolate, fn)->GetFunction(context).ToLocalChecked())
        .Check();
  }
}
