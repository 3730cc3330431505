export { parse, DurationError } from './parse';
export { format } from './format';
export { UNITS, lookupUnit, type Unit } from './units';
