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

  describe('largest', () => {
    it.each([
      [5_415_000, 1, '2h'],
      [5_415_000, 2, '1h 30m'],
      [5_415_000, 3, '1h 30m 15s'],
      [5_415_000, 4, '1h 30m 15s'],
      [90_061_001, 2, '1d 1h'],
      [3_689_000, 2, '1h 1m'],
      [1_234, 1, '1s'],
      [1_500, 1, '2s'],
      [999, 1, '999ms'],
    ])('%i with largest %i -> %s', (ms, largest, expected) => {
      expect(format(ms, { largest })).toBe(expected);
    });

    it.each([
      [59_500, 1, '1m'],
      [59_999, 1, '1m'],
      [7_170_000, 2, '2h'],
      [7_170_000, 1, '2h'],
      [86_370_000, 2, '1d'],
      [3_599_999, 2, '1h'],
      [604_799_500, 4, '1w'],
      [1_213_170_000, 2, '2w 1h'],
      [90_059_500, 3, '1d 1h 1m'],
    ])('carries the rounding: %i with largest %i -> %s', (ms, largest, expected) => {
      expect(format(ms, { largest })).toBe(expected);
    });

    it('never shows a whole larger unit', () => {
      const limits: Record<string, number> = { d: 7, h: 24, m: 60, s: 60, ms: 1_000 };
      for (let ms = 0; ms < 200_000_000; ms += 4_999_999) {
        for (const largest of [1, 2, 3]) {
          for (const part of format(ms, { largest }).split(' ')) {
            const [, count, unit] = /^(\d+)([a-z]+)$/.exec(part)!;
            if (unit in limits) {
              expect(Number(count), `${ms} with largest ${largest}`).toBeLessThan(limits[unit]);
            }
          }
        }
      }
    });

    it('counts non-zero units only', () => {
      expect(format(3_601_000, { largest: 2 })).toBe('1h 1s');
    });

    it('keeps the sign', () => {
      expect(format(-5_415_000, { largest: 1 })).toBe('-2h');
    });

    it.each([0, -1, 1.5, Number.NaN])('refuses largest %s', (largest) => {
      expect(() => format(1_000, { largest })).toThrow(RangeError);
    });
  });

  it('joins units with the separator', () => {
    expect(format(5_415_000, { separator: ', ' })).toBe('1h, 30m, 15s');
    expect(format(5_415_000, { separator: '' })).toBe('1h30m15s');
    expect(format(61_000, { largest: 2, separator: '+' })).toBe('1m+1s');
  });
});
