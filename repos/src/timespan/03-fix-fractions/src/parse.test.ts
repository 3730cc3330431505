import { describe, expect, it } from 'vitest';

import { DurationError, parse } from './parse';

describe('parse', () => {
  describe('single terms', () => {
    it.each([
      ['1ms', 1],
      ['250ms', 250],
      ['1s', 1_000],
      ['90s', 90_000],
      ['1m', 60_000],
      ['2h', 7_200_000],
      ['3d', 259_200_000],
      ['1w', 604_800_000],
    ])('%s', (input, expected) => {
      expect(parse(input)).toBe(expected);
    });
  });

  describe('unit names', () => {
    it.each([
      ['5 seconds', 5_000],
      ['1 second', 1_000],
      ['10 secs', 10_000],
      ['3 min', 180_000],
      ['1 hour', 3_600_000],
      ['2 HRS', 7_200_000],
      ['1 Day', 86_400_000],
      ['2 wks', 1_209_600_000],
      ['15 msecs', 15],
    ])('%s', (input, expected) => {
      expect(parse(input)).toBe(expected);
    });
  });

  describe('fractions', () => {
    it.each([
      ['1.5h', 5_400_000],
      ['0.5s', 500],
      ['0.25s', 250],
      ['2.5 days', 216_000_000],
      ['1.5m 30s', 120_000],
      ['0.75 hours', 2_700_000],
      ['-1.5s', -1_500],
    ])('%s', (input, expected) => {
      expect(parse(input)).toBe(expected);
    });

    it('rounds to whole milliseconds', () => {
      expect(parse('0.1s 0.2s')).toBe(300);
      expect(parse('1.0004s')).toBe(1_000);
      expect(parse('2.6ms')).toBe(3);
      expect(Number.isInteger(parse('0.3333h'))).toBe(true);
    });

    it('needs a digit on both sides of the point', () => {
      expect(() => parse('.5h')).toThrow('unexpected ".5h"');
      expect(() => parse('5.h')).toThrow(DurationError);
    });
  });

  it('adds up several terms', () => {
    expect(parse('1h 30m')).toBe(5_400_000);
    expect(parse('1h30m15s')).toBe(5_415_000);
    expect(parse('2 days, 4 hours')).toBe(187_200_000);
  });

  it('accepts a sign for the whole duration', () => {
    expect(parse('-90s')).toBe(-90_000);
    expect(parse('- 1h 30m')).toBe(-5_400_000);
    expect(parse('+2m')).toBe(120_000);
  });

  it('ignores surrounding space', () => {
    expect(parse('  12 s \n')).toBe(12_000);
  });

  describe('errors', () => {
    it.each([
      ['', 'it is empty'],
      ['   ', 'it is empty'],
      ['-', 'it has no amount'],
      ['5', 'unexpected "5"'],
      ['h', 'unexpected "h"'],
      ['5 parsecs', 'unknown unit "parsecs"'],
      ['1h and 5m', 'unexpected "and 5m"'],
      ['1h -5m', 'unexpected "-5m"'],
    ])('%j', (input, reason) => {
      expect(() => parse(input)).toThrow(DurationError);
      expect(() => parse(input)).toThrow(reason);
    });

    it('keeps the input', () => {
      try {
        parse('ten minutes');
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(DurationError);
        expect((error as DurationError).input).toBe('ten minutes');
        expect((error as DurationError).message).toBe('invalid duration "ten minutes": unexpected "ten minutes"');
      }
    });
  });
});
