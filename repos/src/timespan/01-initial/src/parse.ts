import { lookupUnit } from './units';

/** Thrown when a string is not a duration; `input` is the string. */
export class DurationError extends Error {
  readonly input: string;

  constructor(reason: string, input: string) {
    super(`invalid duration ${JSON.stringify(input)}: ${reason}`);
    this.name = 'DurationError';
    this.input = input;
  }
}

// An amount and its unit, matched where the previous term ended.
const TERM = /(\d+(?:\.\d+)?)\s*([a-z]+)/y;
const SEPARATORS = /[\s,]*/y;

/**
 * Parses a duration such as "1h 30m", "2 days, 4 hours" or "-90s" and returns
 * it in milliseconds. Throws a DurationError when `input` is not a duration.
 */
export function parse(input: string): number {
  const text = input.trim().toLowerCase();
  if (text === '') {
    throw new DurationError('it is empty', input);
  }
  let pos = 0;
  let sign = 1;
  if (text[0] === '-' || text[0] === '+') {
    sign = text[0] === '-' ? -1 : 1;
    pos = 1;
  }
  let total = 0;
  let terms = 0;
  while (true) {
    SEPARATORS.lastIndex = pos;
    SEPARATORS.exec(text);
    pos = SEPARATORS.lastIndex;
    if (pos >= text.length) {
      break;
    }
    TERM.lastIndex = pos;
    const match = TERM.exec(text);
    if (match === null) {
      throw new DurationError(`unexpected ${JSON.stringify(text.slice(pos))}`, input);
    }
    const unit = lookupUnit(match[2]);
    if (unit === undefined) {
      throw new DurationError(`unknown unit ${JSON.stringify(match[2])}`, input);
    }
    total += parseInt(match[1], 10) * unit.ms;
    pos = TERM.lastIndex;
    terms += 1;
  }
  if (terms === 0) {
    throw new DurationError('it has no amount', input);
  }
  return sign * total;
}
