// Wrapping external memory in a SharedArrayBuffer through Node-API. The call for it,
// node_api_create_external_sharedarraybuffer, is experimental: Node 22.23, 24.22 and 26 have it (and Bun), Node 20
// and older 22 and 24 releases do not. The helper is one binary for every runtime, so the call is not linked in: it
// is found in the running process when the helper loads (a weak reference), and mapSections exists only where it is.
#ifndef HEAPLESS_OFFHEAP_NODE_API_SHARED_H_
#define HEAPLESS_OFFHEAP_NODE_API_SHARED_H_

#include <js_native_api_types.h>

namespace heapless {

// True when the runtime that loaded the helper has the call.
bool NodeApiWrapsShared();

// A SharedArrayBuffer over `length` bytes at `data`; `release(data, hint)` runs once no thread refers to it (on
// whichever thread dropped the last reference; it must not touch JavaScript). napi_generic_failure where
// NodeApiWrapsShared() is false.
napi_status WrapShared(napi_env env, void* data, size_t length, void (*release)(void* data, void* hint), void* hint,
                       napi_value* result);

}  // namespace heapless

#endif  // HEAPLESS_OFFHEAP_NODE_API_SHARED_H_
