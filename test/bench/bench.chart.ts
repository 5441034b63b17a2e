import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { BenchResults } from './bench.report';

/**
 * Plain SVG charts drawn from a run's JSON (no browser, no dependency): the scaling curve
 * (handoffs/s and p99 wait against workers, log axes) and the contended handoff bars. Also runs
 * standalone: `ts-node test/bench/bench.chart.ts test/bench/results/record.json` (writes beside the JSON).
 */
const COLORS = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#8c564b',
  '#17becf',
  '#7f7f7f',
];
const FONT = 'font-family="Helvetica, Arial, sans-serif"';

interface Series {
  label: string;
  dashed: boolean;
  points: { x: number; y: number }[];
}

export function writeCharts(r: BenchResults, dir: string, name: string): string[] {
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  if (r.scaling?.series.length) {
    const series = r.scaling.series;
    const tput: Series[] = series.map((s) => ({
      label: s.contender,
      dashed: !s.ours,
      points: s.points.map((p) => ({ x: p.workers, y: p.handoffsPerSec })),
    }));
    const p99: Series[] = series.map((s) => ({
      label: s.contender,
      dashed: !s.ours,
      points: s.points.map((p) => ({ x: p.workers, y: Math.max(p.p99Wait, 0.01) })),
    }));
    const svg = frame(1000, 420, [
      lineChart(tput, {
        x: 0,
        y: 0,
        w: 500,
        h: 420,
        title: 'Handoffs per second (higher is better)',
        logY: false,
      }),
      lineChart(p99, {
        x: 500,
        y: 0,
        w: 500,
        h: 420,
        title: 'p99 wait, ms (lower is better, log scale)',
        logY: true,
      }),
    ]);
    files.push(save(dir, `${name}-scaling.svg`, svg));
  }
  if (r.contended?.rows.length) {
    const rows = r.contended.rows;
    const svg = frame(1000, 40 + rows.length * 26, [
      bars(
        rows.map((x) => ({ label: `${x.contender}`, value: x.handoffsPerSec, ours: x.ours })),
        { x: 0, w: 500, title: `Handoffs/s, ${r.contended.workers} workers on one key` },
      ),
      bars(
        rows.map((x) => ({ label: `${x.contender}`, value: x.wait.p99, ours: x.ours })),
        { x: 500, w: 500, title: 'p99 wait, ms (log scale)', log: true },
      ),
    ]);
    files.push(save(dir, `${name}-contended.svg`, svg));
  }
  return files;
}

function save(dir: string, file: string, svg: string): string {
  writeFileSync(join(dir, file), svg);
  return file;
}

function frame(w: number, h: number, parts: string[]): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" ${FONT} font-size="12">\n<rect width="100%" height="100%" fill="white"/>\n${parts.join('\n')}\n</svg>\n`;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].map((k) => k * p).find((c) => c >= v) ?? 10 * p;
}

function lineChart(
  series: Series[],
  o: { x: number; y: number; w: number; h: number; title: string; logY: boolean },
): string {
  const left = o.x + 60;
  const right = o.x + o.w - 20;
  const top = o.y + 40;
  const bottom = o.y + o.h - 120;
  const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p.x)))].sort((a, b) => a - b);
  const ys = series.flatMap((s) => s.points.map((p) => p.y));
  const lx = (x: number) =>
    left +
    ((Math.log2(x) - Math.log2(xs[0] ?? 1)) /
      Math.max(1e-9, Math.log2(xs[xs.length - 1] ?? 2) - Math.log2(xs[0] ?? 1))) *
      (right - left);
  let ly: (y: number) => number;
  const ticks: number[] = [];
  if (o.logY) {
    const lo = Math.floor(Math.log10(Math.min(...ys)));
    const hi = Math.ceil(Math.log10(Math.max(...ys)));
    for (let e = lo; e <= hi; e++) ticks.push(10 ** e);
    ly = (y) => bottom - ((Math.log10(y) - lo) / Math.max(1, hi - lo)) * (bottom - top);
  } else {
    const max = niceMax(Math.max(...ys));
    for (let i = 0; i <= 5; i++) ticks.push((max * i) / 5);
    ly = (y) => bottom - (y / max) * (bottom - top);
  }
  const out: string[] = [
    `<text x="${o.x + o.w / 2}" y="${o.y + 22}" text-anchor="middle" font-size="14" font-weight="bold">${esc(o.title)}</text>`,
  ];
  for (const t of ticks) {
    out.push(`<line x1="${left}" x2="${right}" y1="${ly(t)}" y2="${ly(t)}" stroke="#e5e5e5"/>`);
    out.push(
      `<text x="${left - 6}" y="${ly(t) + 4}" text-anchor="end">${t >= 1 ? Math.round(t).toLocaleString('en-US') : t}</text>`,
    );
  }
  for (const x of xs)
    out.push(`<text x="${lx(x)}" y="${bottom + 16}" text-anchor="middle">${x}</text>`);
  out.push(
    `<text x="${(left + right) / 2}" y="${bottom + 34}" text-anchor="middle">workers on one key</text>`,
  );
  out.push(
    `<line x1="${left}" x2="${right}" y1="${bottom}" y2="${bottom}" stroke="#333"/><line x1="${left}" x2="${left}" y1="${top}" y2="${bottom}" stroke="#333"/>`,
  );
  series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const d = s.points
      .map((p, j) => `${j ? 'L' : 'M'}${lx(p.x).toFixed(1)},${ly(p.y).toFixed(1)}`)
      .join(' ');
    out.push(
      `<path d="${d}" fill="none" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
    );
    for (const p of s.points)
      out.push(`<circle cx="${lx(p.x).toFixed(1)}" cy="${ly(p.y).toFixed(1)}" r="3" fill="${c}"/>`);
    const ly2 = bottom + 52 + Math.floor(i / 2) * 18;
    const lx2 = left + (i % 2) * 220;
    out.push(
      `<line x1="${lx2}" x2="${lx2 + 24}" y1="${ly2 - 4}" y2="${ly2 - 4}" stroke="${c}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
    );
    out.push(`<text x="${lx2 + 30}" y="${ly2}">${esc(s.label)}</text>`);
  });
  return out.join('\n');
}

function bars(
  items: { label: string; value: number; ours: boolean }[],
  o: { x: number; w: number; title: string; log?: boolean },
): string {
  const labelW = 200;
  const left = o.x + labelW;
  const right = o.x + o.w - 60;
  const max = Math.max(...items.map((i) => i.value), 1e-9);
  const lo = o.log
    ? Math.floor(Math.log10(Math.max(0.01, Math.min(...items.map((i) => i.value)))))
    : 0;
  const scale = (v: number) =>
    o.log
      ? ((Math.log10(Math.max(v, 10 ** lo)) - lo) / Math.max(1e-9, Math.log10(max) - lo + 0.3)) *
        (right - left)
      : (v / niceMax(max)) * (right - left);
  const out = [
    `<text x="${o.x + o.w / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${esc(o.title)}</text>`,
  ];
  items.forEach((it, i) => {
    const y = 36 + i * 26;
    out.push(
      `<text x="${left - 6}" y="${y + 14}" text-anchor="end"${it.ours ? ' font-weight="bold"' : ''}>${esc(it.label)}</text>`,
    );
    out.push(
      `<rect x="${left}" y="${y}" width="${Math.max(1, scale(it.value)).toFixed(1)}" height="18" fill="${it.ours ? '#1f77b4' : '#bbbbbb'}"/>`,
    );
    const v =
      it.value >= 100
        ? Math.round(it.value).toLocaleString('en-US')
        : it.value.toFixed(it.value >= 10 ? 1 : 2);
    out.push(`<text x="${left + Math.max(1, scale(it.value)) + 4}" y="${y + 14}">${v}</text>`);
  });
  return out.join('\n');
}

if (require.main === module) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: bench.chart.ts <results.json>');
  const results = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  console.log(writeCharts(results, dirname(file), results.name).join('\n'));
}
