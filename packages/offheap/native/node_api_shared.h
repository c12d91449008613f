// Wrapping external memory in a SharedArrayBuffer through Node-API, which has it only as an experimental call
// (node_api_create_external_sharedarraybuffer: in the headers of Node 22.23 and 24.22, not in Node 20's).
// node_api_shared.cc is compiled with NAPI_EXPERIMENTAL on its own so that nothing else of the helper depends on
// experimental Node-API.
#ifndef HEAPLESS_OFFHEAP_NODE_API_SHARED_H_
#define HEAPLESS_OFFHEAP_NODE_API_SHARED_H_

#include <js_native_api_types.h>

namespace heapless {

// True when the Node.js headers this was compiled against have the call (checked by the preprocessor).
extern const bool kNodeApiWrapsShared;

// A SharedArrayBuffer over `length` bytes at `data`; `release(data, hint)` runs once no thread refers to it (on
// whichever thread dropped the last reference; it must not touch JavaScript). napi_generic_failure where
// kNodeApiWrapsShared is false.
napi_status WrapShared(napi_env env, void* data, size_t length, void (*release)(void* data, void* hint), void* hint,
                       napi_value* result);

}  // namespace heapless

#endif  // HEAPLESS_OFFHEAP_NODE_API_SHARED_H_
