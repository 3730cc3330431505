export { parse, DurationError } from './parse';
export { format, type FormatOptions } from './format';
export { UNITS, lookupUnit, type Unit } from './units';
