import { describe, expect, it } from 'vitest';

import { format } from '../format';
import { parse } from '../parse';

describe('format with long names', () => {
  it.each([
    [0, '0 milliseconds'],
    [1, '1 millisecond'],
    [1_000, '1 second'],
    [2_000, '2 seconds'],
    [5_400_000, '1 hour 30 minutes'],
    [3_601_000, '1 hour 1 second'],
    [694_861_001, '1 week 1 day 1 hour 1 minute 1 second 1 millisecond'],
    [1_209_600_000, '2 weeks'],
  ])('%i -> %s', (ms, expected) => {
    expect(format(ms, { long: true })).toBe(expected);
  });

  it('works with the other options', () => {
    expect(format(5_415_000, { long: true, largest: 2, separator: ', ' })).toBe('1 hour, 30 minutes');
    expect(format(-61_000, { long: true })).toBe('-1 minute 1 second');
  });

  it('round-trips through parse', () => {
    for (const ms of [1, 61_000, 90_061_001, 1_209_600_000]) {
      expect(parse(format(ms, { long: true }))).toBe(ms);
      expect(parse(format(ms, { long: true, separator: ', ' }))).toBe(ms);
    }
  });
});
