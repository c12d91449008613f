import { isMethodName, RESERVED_NAMES } from '@heapless/client/protocol';
import { ActorError } from '../errors.js';

// biome-ignore lint/complexity/noBannedTypes: any method of the actor
export type Method = Function;

const NOT_MESSAGES = new Set(['constructor', 'onStop', 'stop', 'then', 'close']);

/**
 * The methods of `instance` a ref offers: functions found on it and its prototype chain, below `Object.prototype`,
 * except the constructor and the names refs keep for themselves.
 */
export function methodTable(instance: object): Map<string, Method> {
  const methods = new Map<string, Method>();
  for (let o: object | null = instance; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (NOT_MESSAGES.has(name) || methods.has(name)) continue;
      const d = Object.getOwnPropertyDescriptor(o, name);
      if (d !== undefined && typeof d.value === 'function') methods.set(name, d.value as Method);
    }
  }
  return methods;
}

/**
 * The exposed names: `expose` if given, else the static `exposed` list of the instance's class; each must be a method
 * whose name a client ref can call (`isMethodName`), else HEAPLESS_ERR_ACTOR_NOT_A_METHOD.
 */
export function exposedNames(
  instance: object,
  methods: ReadonlyMap<string, Method>,
  expose?: readonly string[],
): Set<string> {
  const list = expose ?? (instance.constructor as { exposed?: unknown }).exposed ?? [];
  if (!Array.isArray(list))
    throw new ActorError('HEAPLESS_ERR_ACTOR_INVALID_OPTION', 'exposed must be an array of names');
  for (const name of list) {
    if (typeof name !== 'string' || !methods.has(name)) {
      throw new ActorError(
        'HEAPLESS_ERR_ACTOR_NOT_A_METHOD',
        `exposed name ${String(name)} is not a method of the actor`,
      );
    }
    if (!isMethodName(name)) {
      throw new ActorError(
        'HEAPLESS_ERR_ACTOR_NOT_A_METHOD',
        `exposed name ${name} cannot be called through a client ref: a method name is an identifier of letters, digits and _ starting with a letter, and not one of ${RESERVED_NAMES.join(', ')}`,
      );
    }
  }
  return new Set(list as string[]);
}
