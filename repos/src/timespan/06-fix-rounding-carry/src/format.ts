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
  const total = Math.round(Math.abs(ms));
  if (total === 0) {
    return term(0, UNITS[UNITS.length - 1], long);
  }
  // The smallest unit shown is the `largest`-th non-zero one. Round the whole
  // duration to it first, then split: rounding only the last unit shown would
  // lose the carry (59.5s -> "60s" instead of "1m").
  let smallest = UNITS.length - 1;
  let shown = 0;
  let rest = total;
  for (const [index, unit] of UNITS.entries()) {
    const count = Math.floor(rest / unit.ms);
    rest -= count * unit.ms;
    if (count > 0 && ++shown === largest) {
      smallest = index;
      break;
    }
  }
  const step = UNITS[smallest].ms;
  rest = Math.round(total / step) * step;
  const parts: string[] = [];
  for (const unit of UNITS.slice(0, smallest + 1)) {
    const count = Math.floor(rest / unit.ms);
    if (count > 0) {
      parts.push(term(count, unit, long));
      rest -= count * unit.ms;
    }
  }
  return (ms < 0 ? '-' : '') + parts.join(separator);
}
