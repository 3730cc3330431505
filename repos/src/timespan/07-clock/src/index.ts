export { parse, DurationError } from './parse';
export { format, type FormatOptions } from './format';
export { clock } from './clock';
export { UNITS, lookupUnit, type Unit } from './units';
