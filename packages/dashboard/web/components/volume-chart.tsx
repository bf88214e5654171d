import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface VolumePoint {
  /** The UTC day, YYYY-MM-DD. */
  readonly date: string;
  /** Whole units: a float is fine for drawing; figures shown as text come from the exact amounts. */
  readonly received: number;
  readonly sent: number;
}

const DAY_S = 86_400;

/**
 * Daily volume received and sent, as bars (uPlot on a canvas: no inline script or style element, so
 * the dashboard's strict CSP holds). The canvas is hidden from screen readers; the page gives the same
 * figures as a table. Every day of the window is drawn, days without payments as zero.
 */
export function VolumeChart({
  points,
  from,
  days,
  unit,
}: {
  points: readonly VolumePoint[];
  from: number;
  days: number;
  unit: string;
}) {
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = box.current;
    if (element === null) return;
    const byDate = new Map(points.map((p) => [p.date, p]));
    const xs: number[] = [];
    const received: number[] = [];
    const sent: number[] = [];
    for (let i = 0; i < days; i++) {
      const day = from / 1000 + i * DAY_S;
      const point = byDate.get(new Date(day * 1000).toISOString().slice(0, 10));
      xs.push(day);
      received.push(point?.received ?? 0);
      sent.push(point?.sent ?? 0);
    }
    // Received left of the day's tick, sent right of it, so neither hides the other.
    const bars = (align: -1 | 1) => {
      const path = uPlot.paths.bars?.({ size: [0.35, 20], align });
      return path === undefined ? {} : { paths: path };
    };
    const width = () => Math.max(280, element.clientWidth);
    const chart = new uPlot(
      {
        width: width(),
        height: 260,
        // Half a day either side, so the first and last days' bars are whole.
        scales: {
          x: { time: true, range: () => [from / 1000 - DAY_S / 2, from / 1000 + (days - 0.5) * DAY_S] },
        },
        axes: [{}, { label: unit, size: 70 }],
        series: [
          {},
          {
            label: 'Received',
            stroke: '#15803d',
            fill: 'rgba(21, 128, 61, 0.55)',
            ...bars(-1),
            points: { show: false },
          },
          {
            label: 'Sent',
            stroke: '#1d4ed8',
            fill: 'rgba(29, 78, 216, 0.45)',
            ...bars(1),
            points: { show: false },
          },
        ],
      },
      [xs, received, sent],
      element,
    );
    const resize = new ResizeObserver(() => chart.setSize({ width: width(), height: 260 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [points, from, days, unit]);

  return <div ref={box} className="volume-chart" aria-hidden="true" data-testid="volume-chart" />;
}
