// See node_api_shared.h. NAPI_VERSION stays the helper's (8): only the declarations of experimental calls are asked
// for, not the experimental module semantics, which are the module registration's (heapless_offheap.cc).
#define NAPI_VERSION 8
#define NAPI_EXPERIMENTAL
#include <js_native_api.h>

#include "node_api_shared.h"

namespace heapless {

#ifdef NODE_API_EXPERIMENTAL_HAS_CREATE_EXTERNAL_SHAREDARRAYBUFFER

extern const bool kNodeApiWrapsShared = true;

napi_status WrapShared(napi_env env, void* data, size_t length, void (*release)(void*, void*), void* hint,
                       napi_value* result) {
  return node_api_create_external_sharedarraybuffer(env, data, length, release, hint, result);
}

#else

extern const bool kNodeApiWrapsShared = false;

napi_status WrapShared(napi_env, void*, size_t, void (*)(void*, void*), void*, napi_value*) {
  return napi_generic_failure;
}

#endif

}  // namespace heapless
