export { parse, DurationError } from './parse';
export { UNITS, lookupUnit, type Unit } from './units';
