import { describe, expect, it } from 'vitest';

import { format, parse } from '../src/index';

describe('format', () => {
  it.each([
    [0, '0ms'],
    [1, '1ms'],
    [999, '999ms'],
    [1_000, '1s'],
    [61_000, '1m 1s'],
    [5_400_000, '1h 30m'],
    [90_061_001, '1d 1h 1m 1s 1ms'],
    [1_209_600_000, '2w'],
    [694_861_000, '1w 1d 1h 1m 1s'],
  ])('%i -> %s', (ms, expected) => {
    expect(format(ms)).toBe(expected);
  });

  it('keeps the sign', () => {
    expect(format(-90_000)).toBe('-1m 30s');
  });

  it('rounds to whole milliseconds', () => {
    expect(format(1_499.6)).toBe('1s 500ms');
    expect(format(0.4)).toBe('0ms');
    expect(format(-0.4)).toBe('0ms');
  });

  it('refuses what is not a number of milliseconds', () => {
    expect(() => format(Number.NaN)).toThrow(RangeError);
    expect(() => format(Number.POSITIVE_INFINITY)).toThrow('cannot format Infinity');
  });

  it('round-trips through parse', () => {
    for (const ms of [1, 59_999, 3_600_000, 86_399_999, 604_800_001]) {
      expect(parse(format(ms))).toBe(ms);
    }
  });
});
