import { describe, expect, it } from 'vitest';

import { clock } from '../src/index';

describe('clock', () => {
  it.each([
    [0, '0:00'],
    [999, '0:00'],
    [1_000, '0:01'],
    [59_999, '0:59'],
    [60_000, '1:00'],
    [754_000, '12:34'],
    [3_600_000, '1:00:00'],
    [3_723_000, '1:02:03'],
    [97_200_000, '27:00:00'],
  ])('%i -> %s', (ms, expected) => {
    expect(clock(ms)).toBe(expected);
  });

  it('puts the sign first', () => {
    expect(clock(-61_000)).toBe('-1:01');
    expect(clock(-3_723_000)).toBe('-1:02:03');
  });

  it('has no minus zero', () => {
    expect(clock(-500)).toBe('0:00');
  });

  it('refuses what is not a number of milliseconds', () => {
    expect(() => clock(Number.NaN)).toThrow(RangeError);
  });
});
