/**
 * Which property names of a ref can be remote methods. A ref is a Proxy, and without a rule every name a library
 * probes would become a remote call: `then` (await), `toJSON` (JSON.stringify), `$$typeof` (React), `nodeType`
 * (DOM checks), `asymmetricMatch` (test matchers), `Symbol.toPrimitive`, `util.inspect.custom`. The actor runtime
 * refuses to expose a name this rule excludes, so every exposed method stays callable.
 */

/** Names a ref keeps for itself, or that probes use; never remote methods. */
export const RESERVED_NAMES = [
  'close',
  'then',
  'catch',
  'finally',
  'toJSON',
  'toString',
  'toLocaleString',
  'valueOf',
  'constructor',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'inspect',
  'nodeType',
  'asymmetricMatch',
  'stop',
  'onStop',
] as const;

/** A name of {@link RESERVED_NAMES}. */
export type ReservedName = (typeof RESERVED_NAMES)[number];

/** An identifier of ASCII letters, digits and `_`, starting with a letter: no `$$typeof`, `@@iterator`, `__proto__`. */
const METHOD_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const RESERVED: ReadonlySet<string> = new Set(RESERVED_NAMES);

/** Whether `name` can be a remote method: an identifier starting with a letter, and not reserved. */
export function isMethodName(name: unknown): name is string {
  return typeof name === 'string' && METHOD_NAME.test(name) && !RESERVED.has(name);
}
