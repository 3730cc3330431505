/**
 * Formats a duration as a clock: "m:ss", or "h:mm:ss" from one hour up.
 * Seconds are rounded down; hours keep growing past 24 ("27:00:00").
 */
export function clock(ms: number): string {
  if (!Number.isFinite(ms)) {
    throw new RangeError(`cannot format ${ms} as a clock`);
  }
  const seconds = Math.floor(Math.abs(ms) / 1_000);
  const h = Math.floor(seconds / 3_600);
  const m = Math.floor((seconds % 3_600) / 60);
  const s = seconds % 60;
  const sign = ms < 0 && seconds > 0 ? '-' : '';
  const ss = String(s).padStart(2, '0');
  if (h === 0) {
    return `${sign}${m}:${ss}`;
  }
  return `${sign}${h}:${String(m).padStart(2, '0')}:${ss}`;
}
