import { UNITS, type Unit } from './units';

export interface FormatOptions {
  /**
   * Show at most this many non-zero units, largest first; the last one shown
   * is rounded to the nearest whole amount. Default: all of them.
   */
  largest?: number;
  /** Put between units. Default: a space. */
  separator?: string;
  /** Write "1 hour 30 minutes" instead of "1h 30m". Default: false. */
  long?: boolean;
}

function term(count: number, unit: Unit, long: boolean): string {
  if (!long) {
    return `${count}${unit.name}`;
  }
  return `${count} ${unit.long}${count === 1 ? '' : 's'}`;
}

/**
 * Formats a duration in milliseconds as "1h 30m": every non-zero unit,
 * largest first. The input is rounded to whole milliseconds; zero is "0ms".
 */
export function format(ms: number, options: FormatOptions = {}): string {
  const { largest = Number.POSITIVE_INFINITY, separator = ' ', long = false } = options;
  if (!Number.isFinite(ms)) {
    throw new RangeError(`cannot format ${ms} as a duration`);
  }
  if (!(largest >= 1) || (Number.isFinite(largest) && !Number.isInteger(largest))) {
    throw new RangeError(`largest must be a whole number of at least 1, not ${largest}`);
  }
  let rest = Math.round(Math.abs(ms));
  if (rest === 0) {
    return term(0, UNITS[UNITS.length - 1], long);
  }
  const parts: string[] = [];
  for (const unit of UNITS) {
    if (parts.length + 1 === largest && rest >= unit.ms) {
      // The last unit shown: round what is left to the nearest whole unit.
      parts.push(term(Math.round(rest / unit.ms), unit, long));
      break;
    }
    const count = Math.floor(rest / unit.ms);
    if (count > 0) {
      parts.push(term(count, unit, long));
      rest -= count * unit.ms;
    }
  }
  return (ms < 0 ? '-' : '') + parts.join(separator);
}
