/**
 * The one flag parser of the `heapless` commands. A command declares its flags in tables (flag name → type, range,
 * default, environment variable, config-file key, help line), grouped as its usage shows them; `parseFlags` reads a
 * command line against a table (node:util's `parseArgs`, strict: an unknown flag or a missing value is refused),
 * `values()` then converts and checks each value, and `groupsUsage` writes the groups' help. Every refusal is an
 * `ActorError` `HEAPLESS_ERR_ACTOR_USAGE` that names the flag, which the `heapless` command prints and exits 2 on.
 *
 * The values are converted only when asked for, so that a command checks the shape of its command line first (its
 * subcommand, `--help`, `--version`) and a bad value of a flag it would not use does not hide that answer.
 */
import { parseArgs } from 'node:util';
import { ActorError } from '../errors.js';

/** One flag. */
export interface FlagSpec {
  /** `strings`: the flag may be repeated, its values in order; `integer`: decimal digits only, within min..max. */
  readonly type: 'boolean' | 'string' | 'strings' | 'integer';
  /** The one-letter alias (`-h`). */
  readonly short?: string;
  /** An integer's bounds (default: from 0 to Number.MAX_SAFE_INTEGER). */
  readonly min?: number;
  readonly max?: number;
  /** A string's allowed values. */
  readonly choices?: readonly string[];
  /** The value of an absent flag (a boolean's is false, a repeatable one's is []; otherwise undefined). */
  readonly default?: string | number;
  /** The environment variable whose value an absent flag takes (before its default). */
  readonly env?: string;
  /** The option's key in a config file that holds options by name (`--config`): see `configFlag`. */
  readonly config?: string;
  /** The name of its value in the help (DIR, N); none for a boolean. */
  readonly arg?: string;
  /** Its help, one string a line; a flag without help is not listed. */
  readonly help?: readonly string[];
}

export type FlagTable = Readonly<Record<string, FlagSpec>>;

/** Flags as the usage shows them together: a title (one or more lines), their rows, and a note below. */
export interface FlagGroup<T extends FlagTable = FlagTable> {
  readonly title: string;
  /** Where the help of each row starts, after the two spaces of indent. */
  readonly column: number;
  readonly flags: T;
  readonly note?: string;
}

type ValueOf<S extends FlagSpec> = S['type'] extends 'boolean'
  ? boolean
  : S['type'] extends 'strings'
    ? string[]
    : S['type'] extends 'integer'
      ? number
      : string;

/** The values of a table's flags: undefined only where a flag may be absent (no default, not boolean or repeatable). */
export type FlagValues<T extends FlagTable> = {
  -readonly [K in keyof T]:
    | ValueOf<T[K]>
    | (T[K] extends { default: string | number }
        ? never
        : T[K]['type'] extends 'boolean' | 'strings'
          ? never
          : undefined);
};

/** A command line read against a table. */
export interface ParsedFlags<T extends FlagTable> {
  readonly positionals: string[];
  /** The flags the command line gives. */
  readonly given: ReadonlySet<keyof T & string>;
  /** The values as given, unchecked (what a command needs before the others: `--config`'s path). */
  readonly raw: Readonly<Partial<Record<keyof T, string | boolean | string[]>>>;
  /** Every flag's value, converted and checked in the table's order. Throws HEAPLESS_ERR_ACTOR_USAGE naming the flag. */
  values(): FlagValues<T>;
}

/** The error of a bad command line: the `heapless` command prints its message and exits 2. */
export function usageError(message: string, cause?: unknown): ActorError {
  return new ActorError('HEAPLESS_ERR_ACTOR_USAGE', message, cause === undefined ? undefined : { cause });
}

/**
 * Reads `argv` (the arguments after the command's name) against `table`; `env` gives the values of absent flags that
 * name a variable. Throws HEAPLESS_ERR_ACTOR_USAGE for an unknown flag or a flag without its value.
 */
export function parseFlags<T extends FlagTable>(
  table: T,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): ParsedFlags<T> {
  const options: Record<string, { type: 'boolean' | 'string'; multiple?: boolean; short?: string }> = {};
  for (const [name, spec] of Object.entries(table)) {
    options[name] = {
      type: spec.type === 'boolean' ? 'boolean' : 'string',
      ...(spec.type === 'strings' ? { multiple: true } : {}),
      ...(spec.short === undefined ? {} : { short: spec.short }),
    };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options });
  } catch (e) {
    throw usageError((e as Error).message, e);
  }
  const raw = parsed.values as Partial<Record<keyof T, string | boolean | string[]>>;
  return {
    positionals: parsed.positionals,
    given: new Set(Object.keys(raw)) as Set<keyof T & string>,
    raw,
    values: () => {
      const out: Record<string, unknown> = {};
      for (const [name, spec] of Object.entries(table)) {
        out[name] = flagValue(name, spec, raw[name] ?? (spec.env === undefined ? undefined : env[spec.env]));
      }
      return out as FlagValues<T>;
    },
  };
}

function flagValue(name: string, spec: FlagSpec, v: string | boolean | string[] | undefined): unknown {
  if (spec.type === 'boolean') return v === true;
  if (spec.type === 'strings') return v ?? [];
  if (v === undefined) return spec.default;
  if (spec.type === 'integer') return integerOf(name, v as string, spec.min ?? 0, spec.max);
  if (spec.choices !== undefined && !spec.choices.includes(v as string)) {
    throw usageError(`--${name} must be one of ${spec.choices.join(', ')}, got ${String(v)}`);
  }
  return v;
}

/** The integer `v` (decimal digits only) from `min` to `max`; throws HEAPLESS_ERR_ACTOR_USAGE naming the flag otherwise. */
function integerOf(name: string, v: string, min: number, max: number | undefined): number {
  const n = /^\d+$/.test(v) ? Number(v) : Number.NaN;
  if (!(n >= min && n <= (max ?? Number.MAX_SAFE_INTEGER))) {
    throw usageError(
      `--${name} must be an integer ${max === undefined ? `>= ${min}` : `from ${min} to ${max}`}, got ${v}`,
    );
  }
  return n;
}

const CONFIG_KINDS = {
  string: 'a string',
  integer: 'an integer',
  boolean: 'a boolean',
  strings: 'an array of strings',
};

/**
 * The command-line flags that `value`, a config file's value of flag `name`'s option, stands for (a false boolean:
 * none), for the flag parser to check as it checks the command line. Throws HEAPLESS_ERR_ACTOR_USAGE "`at` must be ..."
 * for a value of another JSON type.
 */
export function configFlag(name: string, spec: FlagSpec, value: unknown, at: string): string[] {
  const bad = () => usageError(`${at} must be ${CONFIG_KINDS[spec.type]}`);
  switch (spec.type) {
    case 'boolean':
      if (typeof value !== 'boolean') throw bad();
      return value ? [`--${name}`] : [];
    case 'strings':
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) throw bad();
      return value.flatMap((v: string) => [`--${name}`, v]);
    case 'integer':
      if (!Number.isInteger(value)) throw bad();
      return [`--${name}`, String(value)];
    case 'string':
      if (typeof value !== 'string') throw bad();
      return [`--${name}`, value];
  }
}

/** The help of `groups`: each its title, a row per flag that has help, and its note; a blank line between groups. */
export function groupsUsage(groups: readonly FlagGroup[]): string {
  return groups.map(groupUsage).join('\n');
}

function groupUsage(group: FlagGroup): string {
  const indent = ' '.repeat(2 + group.column);
  let text = `${group.title}\n`;
  for (const [name, spec] of Object.entries(group.flags)) {
    if (spec.help === undefined) continue;
    const left = `  --${name}${spec.arg === undefined ? '' : ` ${spec.arg}`}`;
    const [first, ...more] = spec.help;
    // A flag longer than the column stands on a line of its own; one that just fits keeps two spaces before its help.
    if (left.length > indent.length) text += `${left}\n${indent}${first}\n`;
    else text += `${left.padEnd(Math.max(indent.length, left.length + 2))}${first}\n`;
    for (const line of more) text += `${indent}${line}\n`;
  }
  return group.note === undefined ? text : `${text}${group.note}\n`;
}
