import { type ReactNode, useEffect, useRef } from "react";
import uPlot, { type AlignedData, type Options } from "uplot";
import "uplot/dist/uPlot.min.css";
import { formatTime } from "../format.ts";
import { tickLabels, tickStep, timeRange, timeTicks } from "./time-axis.ts";

/**
 * A uPlot chart that follows its container's width. The canvas says nothing to assistive tech, so
 * the chart is an image with a summary, and its numbers are in a table just below (`table`).
 */
export function Chart({
  label,
  options,
  data,
  height = 220,
  table,
}: {
  /** What the chart shows, read out for the image. */
  label: string;
  options: Omit<Options, "width" | "height">;
  data: AlignedData;
  height?: number;
  table?: ReactNode;
}) {
  const container = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = container.current;
    if (!element) return undefined;
    const width = () => Math.max(280, element.clientWidth);
    const plot = new uPlot({ ...options, width: width(), height }, data, element);
    const observer = new ResizeObserver(() => plot.setSize({ width: width(), height }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
    };
  }, [options, data, height]);
  return (
    <figure className="chart">
      <div ref={container} role="img" aria-label={label} />
      {table && (
        <details>
          <summary>Show the numbers</summary>
          {table}
        </details>
      )}
    </figure>
  );
}

/** Colors of outcomes; each series also has its own name in the legend and the table. */
export const COLORS = {
  sent: "#1b7f3b",
  failed: "#b3261e",
  retried: "#b26a00",
  p50: "#1f5fbf",
  p99: "#6b3fa0",
};

/**
 * A series' legend value: the hovered point's, or — when nothing is hovered, where uPlot would
 * print "--" — what the series amounts to over the whole chart (a total), or nothing.
 */
export function legendValue(
  pointValue: (value: number, index: number) => string,
  whenNoneHovered = "",
): (self: uPlot, value: number | null, seriesIndex: number, index: number | null) => string {
  return (_self, value, _seriesIndex, index) =>
    index === null || index === undefined ? whenNoneHovered : value === null ? "—" : pointValue(value, index);
}

/** The time series' legend: the hovered point's time, or what the chart spans when none is hovered. */
export function timeLegend(whenNoneHovered: string): uPlot.Series {
  return {
    label: "Time",
    value: legendValue((seconds) => formatTime(new Date(seconds * 1000).toISOString()), whenNoneHovered),
  };
}

/** About one tick per 110 px of the plot. */
const mostTicks = (self: uPlot) => Math.max(2, Math.floor(self.bbox.width / devicePixelRatio / 110));

/** An x scale of times that spans its data's own range (a few minutes around a single point). */
export const dataTimeScale: uPlot.Scale = {
  time: true,
  range: (_self, min, max) => timeRange(min, max),
};

/** Its axis: ticks at round times of the browser's zone, labelled as precisely as their step. */
export const dataTimeAxis: uPlot.Axis = {
  splits: (self, _axis, min, max) => timeTicks(min, max, mostTicks(self)),
  values: (self, splits) => {
    const { min = 0, max = 0 } = self.scales.x ?? {};
    return tickLabels(splits, tickStep(min, max, mostTicks(self)), max - min);
  },
};

export const barPaths = uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 60] }) : undefined;
