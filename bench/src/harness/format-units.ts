/**
 * Short human forms of figures for the table: three significant digits, SI prefixes for counts and rates, binary
 * prefixes for bytes. The JSON output always carries the exact numbers.
 */

const SI = [
  { limit: 1e9, divisor: 1e9, suffix: 'G' },
  { limit: 1e6, divisor: 1e6, suffix: 'M' },
  { limit: 1e3, divisor: 1e3, suffix: 'k' },
] as const;

const BINARY = [
  { divisor: 2 ** 30, suffix: 'GiB' },
  { divisor: 2 ** 20, suffix: 'MiB' },
  { divisor: 2 ** 10, suffix: 'KiB' },
] as const;

/** Three significant digits without exponent notation: 0.0123, 1.23, 12.3, 123, 1234. */
export function significant(value: number): string {
  if (value === 0 || !Number.isFinite(value)) return String(value);
  const abs = Math.abs(value);
  const decimals = abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : Math.min(6, 2 - Math.floor(Math.log10(abs)));
  return value.toFixed(decimals);
}

/** Formats `value` of `unit` for a person: `1.23M` ops/s, `12.3 MiB`, `85.2` µs. */
export function formatValue(value: number, unit: string): string {
  if (unit === 'B') {
    for (const { divisor, suffix } of BINARY) {
      if (Math.abs(value) >= divisor) return `${significant(value / divisor)} ${suffix}`;
    }
    return `${value} B`;
  }
  if (unit === 'ops/s' || unit === 'count') {
    for (const { limit, divisor, suffix } of SI) {
      if (Math.abs(value) >= limit) return `${significant(value / divisor)}${suffix}`;
    }
  }
  return significant(value);
}

/** A ratio as `×1.23`. */
export function formatRatio(ratio: number): string {
  return `×${significant(ratio)}`;
}
