/**
 * Stacked bars: each series becomes the running total of itself and the ones before it, so the last
 * one is the bucket's total. Returns x first, then the stacked series in the same order.
 */
export function stack(x: number[], series: number[][]): number[][] {
  const totals = x.map(() => 0);
  const stacked = series.map((values) =>
    values.map((value, index) => {
      totals[index] = (totals[index] ?? 0) + value;
      return totals[index] as number;
    }),
  );
  return [x, ...stacked];
}
