// See node_api_shared.h. The declaration is the helper's own, with the signature of the Node.js headers that have the
// call (js_native_api.h under NAPI_EXPERIMENTAL), so that it compiles against any Node's headers, 20's included.
#include "node_api_shared.h"

extern "C" napi_status node_api_create_external_sharedarraybuffer(napi_env env, void* external_data,
                                                                  size_t byte_length,
                                                                  void (*finalize_cb)(void* data, void* hint),
                                                                  void* finalize_hint, napi_value* result)
    __attribute__((weak));

namespace heapless {

bool NodeApiWrapsShared() { return node_api_create_external_sharedarraybuffer != nullptr; }

napi_status WrapShared(napi_env env, void* data, size_t length, void (*release)(void*, void*), void* hint,
                       napi_value* result) {
  if (!NodeApiWrapsShared()) return napi_generic_failure;
  return node_api_create_external_sharedarraybuffer(env, data, length, release, hint, result);
}

}  // namespace heapless
