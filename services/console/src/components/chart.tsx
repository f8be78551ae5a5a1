import { type ReactNode, useEffect, useRef } from "react";
import uPlot, { type AlignedData, type Options } from "uplot";
import "uplot/dist/uPlot.min.css";

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

export const barPaths = uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 60] }) : undefined;
