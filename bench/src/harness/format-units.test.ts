import { describe, expect, it } from 'vitest';
import { formatRatio, formatValue, significant } from './format-units.js';

describe('format-units', () => {
  it('keeps three significant digits', () => {
    expect(significant(1234.5)).toBe('1235');
    expect(significant(123.4)).toBe('123');
    expect(significant(12.34)).toBe('12.3');
    expect(significant(1.234)).toBe('1.23');
    expect(significant(0.01234)).toBe('0.0123');
    expect(significant(0)).toBe('0');
  });

  it('uses SI prefixes for rates and binary prefixes for bytes', () => {
    expect(formatValue(1_234_567, 'ops/s')).toBe('1.23M');
    expect(formatValue(412_345, 'ops/s')).toBe('412k');
    expect(formatValue(950, 'ops/s')).toBe('950');
    expect(formatValue(5 * 2 ** 20, 'B')).toBe('5.00 MiB');
    expect(formatValue(512, 'B')).toBe('512 B');
    expect(formatValue(85.23, 'µs')).toBe('85.2');
    expect(formatRatio(0.8512)).toBe('×0.851');
  });
});
