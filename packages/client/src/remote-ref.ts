/** What a ref needs from the thing that carries its calls (a WebSocket or an HTTP client). */
export interface CallTarget {
  call(method: string, args: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * A Proxy whose every string property is a function calling the method of that name on `target`, except `close`
 * (closes the target) and `then` (undefined, so that a ref is not mistaken for a promise by `await`). The method
 * functions are made once per name and cached.
 */
export function remoteRef<R>(target: CallTarget): R {
  const methods = new Map<string, (...args: unknown[]) => Promise<unknown>>();
  const close = () => target.close();
  return new Proxy(Object.create(null) as object, {
    get(_, prop) {
      if (typeof prop !== 'string' || prop === 'then') return undefined;
      if (prop === 'close') return close;
      let f = methods.get(prop);
      if (f === undefined) {
        f = (...args: unknown[]) => target.call(prop, args);
        methods.set(prop, f);
      }
      return f;
    },
  }) as R;
}
