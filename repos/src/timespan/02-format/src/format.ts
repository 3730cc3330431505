import { UNITS } from './units';

/**
 * Formats a duration in milliseconds as "1h 30m": every non-zero unit,
 * largest first. The input is rounded to whole milliseconds; zero is "0ms".
 */
export function format(ms: number): string {
  if (!Number.isFinite(ms)) {
    throw new RangeError(`cannot format ${ms} as a duration`);
  }
  let rest = Math.round(Math.abs(ms));
  if (rest === 0) {
    return '0ms';
  }
  const parts: string[] = [];
  for (const unit of UNITS) {
    const count = Math.floor(rest / unit.ms);
    if (count > 0) {
      parts.push(`${count}${unit.name}`);
      rest -= count * unit.ms;
    }
  }
  return (ms < 0 ? '-' : '') + parts.join(' ');
}
