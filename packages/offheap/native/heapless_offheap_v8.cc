// The one part of the native helper that needs V8 itself: a SharedArrayBuffer over memory we mapped, for a Node
// whose Node-API cannot wrap external memory in one (node_api_shared.h: Node 20, and older 22 and 24 releases).
// scripts/build-native.mjs builds it only there, for the Node running the build; everything else, and the mapping
// wherever Node-API can do it, is heapless_offheap.cc, prebuilt once for every runtime. V8's API is C++ with no
// stable ABI, so this binary is bound to one Node ABI (NODE_MODULE_VERSION, which Node checks when it loads it).
//
//   mapSections(fd, [offset, fileLength, length, ...]) -> SharedArrayBuffer[]
//     The same as heapless_offheap.cc's mapSections.
//   helperVersion: as heapless_offheap.cc's.
#include <node.h>
#include <v8.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "mapped_region.h"

// v8::SharedArrayBuffer::NewBackingStore over caller-owned memory with a deleter: V8 8.0 (Node 14) and later,
// unchanged through V8 14 (Node 26). The other calls here are the context-taking forms V8 13 requires, and the
// isolate comes from v8::Isolate::GetCurrent(), which every V8 has: V8 14 removed v8::Context::GetIsolate().
#if V8_MAJOR_VERSION < 8
#error "heapless_offheap_v8.cc needs V8 8 or later (v8::SharedArrayBuffer::NewBackingStore)"
#endif

namespace {

void Throw(v8::Isolate* isolate, const char* what, int err) {
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  std::string message = std::string(what) + ": " + strerror(err);
  v8::Local<v8::Value> e = v8::Exception::Error(v8::String::NewFromUtf8(isolate, message.c_str()).ToLocalChecked());
  e.As<v8::Object>()
      ->Set(context, v8::String::NewFromUtf8Literal(isolate, "code"),
            v8::String::NewFromUtf8(isolate, heapless::ErrnoCode(err)).ToLocalChecked())
      .Check();
  isolate->ThrowException(e);
}

void ReleaseRegion(void* data, size_t length, void* deleter_data) {
  (void)data;
  (void)length;
  heapless::FreeRegion(static_cast<heapless::Region*>(deleter_data));
}

void MapSections(const v8::FunctionCallbackInfo<v8::Value>& args) {
  v8::Isolate* isolate = args.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  if (args.Length() < 2 || !args[0]->IsInt32() || !args[1]->IsArray()) {
    isolate->ThrowException(v8::Exception::TypeError(
        v8::String::NewFromUtf8Literal(isolate, "mapSections(fd, [offset, fileLength, length, ...])")));
    return;
  }
  int fd = args[0].As<v8::Int32>()->Value();
  v8::Local<v8::Array> list = args[1].As<v8::Array>();
  v8::Local<v8::Array> out = v8::Array::New(isolate, static_cast<int>(list->Length() / 3));
  for (uint32_t i = 0; i + 2 < list->Length(); i += 3) {
    double n[3];
    for (uint32_t k = 0; k < 3; k++) {
      v8::Local<v8::Value> v = list->Get(context, i + k).ToLocalChecked();
      n[k] = v->IsNumber() ? v.As<v8::Number>()->Value() : -1;
    }
    if (!heapless::ValidSection(n[0], n[1], n[2])) {
      Throw(isolate, "mapSections", EINVAL);
      return;
    }
    heapless::Region* region =
        heapless::MapRegion(fd, static_cast<off_t>(n[0]), static_cast<size_t>(n[1]), static_cast<size_t>(n[2]));
    if (region == nullptr) {
      Throw(isolate, "mmap", errno);
      return;
    }
    std::shared_ptr<v8::BackingStore> store =
        v8::SharedArrayBuffer::NewBackingStore(region->raw, region->length, ReleaseRegion, region);
    out->Set(context, i / 3, v8::SharedArrayBuffer::New(isolate, store)).Check();
  }
  args.GetReturnValue().Set(out);
}

}  // namespace

NODE_MODULE_INIT(/* exports, module, context */) {
  v8::Isolate* isolate = v8::Isolate::GetCurrent();
  exports
      ->Set(context, v8::String::NewFromUtf8Literal(isolate, "mapSections"),
            v8::FunctionTemplate::New(isolate, MapSections)->GetFunction(context).ToLocalChecked())
      .Check();
  exports->Set(context, v8::String::NewFromUtf8Literal(isolate, "helperVersion"), v8::Integer::New(isolate, heapless::kHelperVersion)).Check();
}
