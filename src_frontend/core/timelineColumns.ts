// The timeline's walk over its data, apart from the drawing (timeline.ts): the min and max of
// the measured and estimated context per pixel column, and the top of the scale. A 100,000-entry
// session has tens of thousands of calls; the strip draws its lines from these columns, made
// once per data, width and what-if replay.

import type { TimelineData } from './timeline';
import type { Hypothesis } from './whatif';

export interface Columns {
  width: number;
  /** Per pixel column: min/max of measured (NaN: none) and of estimated. */
  mMin: Float64Array;
  mMax: Float64Array;
  eMin: Float64Array;
  eMax: Float64Array;
  yMax: number;
}

/** Column `c`'s min and max widened to hold `value` (NaN: nothing there yet). */
function widen(min: Float64Array, max: Float64Array, c: number, value: number): void {
  if (!(min[c] <= value)) {
    min[c] = value;
  }
  if (!(max[c] >= value)) {
    max[c] = value;
  }
}

/** The columns of `d` over `width` pixels, with a what-if replay and the threshold on the scale when near. */
export function columnsOf(d: TimelineData, width: number, hyp: Hypothesis | null, threshold: number): Columns {
  const mMin = new Float64Array(width).fill(NaN);
  const mMax = new Float64Array(width).fill(NaN);
  const eMin = new Float64Array(width).fill(NaN);
  const eMax = new Float64Array(width).fill(NaN);
  const n = d.call_count;
  const { measured, estimated } = d.calls;
  let dataMax = 0;
  for (let i = 0; i < n; i++) {
    // the column of the call's centre, where its point and the pointer's call are
    const c = Math.min(width - 1, Math.floor(((i + 0.5) / n) * width));
    const m = measured[i];
    if (m !== null) {
      widen(mMin, mMax, c, m);
      if (m > dataMax) {
        dataMax = m;
      }
    }
    const e = estimated[i];
    widen(eMin, eMax, c, e);
    if (e > dataMax) {
      dataMax = e;
    }
  }
  // tokensBefore is not on the scale: it is the label of its marker, and a hand-written or
  // extension-made value (the seed's 115,000 over a 29-token context) would flatten the rest.
  // The threshold is shown when it is near the data; a 1M window over a 100k session would
  // flatten the sawtooth, so then it is named at the top instead.
  if (hyp) {
    for (let i = 0; i < hyp.tokens.length; i++) {
      if (hyp.tokens[i] > dataMax) {
        dataMax = hyp.tokens[i];
      }
    }
  }
  let yMax = Math.max(1, dataMax);
  if (threshold > 0 && threshold < dataMax * 1.6) {
    yMax = Math.max(yMax, threshold);
  }
  if (hyp && hyp.threshold > 0 && hyp.threshold < dataMax * 1.6) {
    yMax = Math.max(yMax, hyp.threshold);
  }
  return { width, mMin, mMax, eMin, eMax, yMax: yMax * 1.06 };
}
