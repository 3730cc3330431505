/** A unit of time: its short name, long name and length in milliseconds. */
export interface Unit {
  readonly name: string;
  readonly long: string;
  readonly ms: number;
}

/** The units, largest first. */
export const UNITS: readonly Unit[] = [
  { name: 'w', long: 'week', ms: 604_800_000 },
  { name: 'd', long: 'day', ms: 86_400_000 },
  { name: 'h', long: 'hour', ms: 3_600_000 },
  { name: 'm', long: 'minute', ms: 60_000 },
  { name: 's', long: 'second', ms: 1_000 },
  { name: 'ms', long: 'millisecond', ms: 1 },
];

const EXTRA_ALIASES: Record<string, string> = {
  wk: 'w',
  wks: 'w',
  hr: 'h',
  hrs: 'h',
  min: 'm',
  mins: 'm',
  sec: 's',
  secs: 's',
  msec: 'ms',
  msecs: 'ms',
};

const BY_NAME = new Map<string, Unit>();
for (const unit of UNITS) {
  BY_NAME.set(unit.name, unit);
  BY_NAME.set(unit.long, unit);
  BY_NAME.set(`${unit.long}s`, unit);
}
for (const [alias, name] of Object.entries(EXTRA_ALIASES)) {
  BY_NAME.set(alias, BY_NAME.get(name)!);
}

/** The unit a name stands for (case-insensitive), or undefined. */
export function lookupUnit(name: string): Unit | undefined {
  return BY_NAME.get(name.toLowerCase());
}
