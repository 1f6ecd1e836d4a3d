// The monitor view's part of the contract (LensWidget.from_monitor: a training run's steps).
// Python side: lens_widget/widget/monitor/monitor_protocol.py. Re-exported by protocol.ts, whose
// contract test reads this file too.

/** The traced steps of a monitored training run (widget/monitor/monitor_view.py), updated live. */
export interface MonitorInfo {
  steps: number[];
  kept: number[]; // steps whose whole log was kept: the "activation" request takes `step`
  nonfinite: number[]; // steps where some op's output or gradient held NaN/Inf
  grads: boolean;
  stats: string[];
  every: number;
}

export type MonitorSide = "activation" | "gradient";
export type MonitorStat = "mean" | "std" | "min" | "max" | "absmax" | "zero_fraction" | "nan" | "inf" | "numel";
export type MonitorMode = "value" | "change";

/** result MonitorStepResult; buffers[0]: float32 LE, `stat` (or its relative change since the
 * first step) of every op of the step, in the order of the ids of `opsKey`. */
export interface MonitorStepRequest {
  method: "monitorStep";
  params: {
    step: number;
    stat: MonitorStat;
    side?: MonitorSide; // default "activation"
    mode?: MonitorMode; // default "value"
    top?: number; // how many changed ops to rank (default 20)
    idsOf?: number; // the opsKey whose ids the frontend holds: ids then come back null
  };
}

/** result MonitorSeriesResult; buffers[i]: float32 LE rows (one per step) of `stats`, for sides[i]. */
export interface MonitorSeriesRequest {
  method: "monitorSeries";
  params: { id: string };
}

export interface MonitorRankedOp {
  id: string;
  change: number | null; // relative change of the stat since the first step
  nonfinite: boolean; // its output or gradient held NaN/Inf at the step
}

export interface MonitorStepResult {
  step: number;
  side: MonitorSide;
  stat: MonitorStat;
  mode: MonitorMode;
  opsKey: number;
  ids: string[] | null; // null: the same ops as `idsOf`
  ranked: MonitorRankedOp[];
  firstNonfinite: { id: string; side: MonitorSide } | null;
}

export interface MonitorSeriesResult {
  id: string;
  steps: number[];
  stats: string[];
  sides: MonitorSide[];
  kept: number[]; // of `steps`, those kept whole
}
