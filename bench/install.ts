// Install and start-up figures (issue #27): what a user waits for and what lands on their disk.
//   - a fresh `npm ci` of the repository (a clone of HEAD) and its node_modules;
//   - the production install of the packed gate402 (`npm install --omit=dev <tarballs>`), beside a bare
//     Fastify app's install in the same run;
//   - from starting the installed `gate402 serve` to /healthz, on a fresh and on an existing DATA_DIR,
//     beside starting a bare Fastify server;
//   - one CLI command (`gate402 --help`), beside `node -e ""`;
//   - the RSS at idle of every process `gate402 serve` runs (the gateway, the localnet, anvil).
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Benchmark, BenchRow } from './bench-row.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const WORKSPACES = ['packages/localnet', 'packages/dashboard', 'packages/server', 'packages/client'];
const MiB = 1024 * 1024;

const install: Benchmark = async () => {
  const scratch = mkdtempSync(join(tmpdir(), 'gate402-bench-install-'));
  try {
    const rows: BenchRow[] = [];
    rows.push(...freshCi(join(scratch, 'clone')));

    const packDir = join(scratch, 'packs');
    mkdirSync(packDir);
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'ignore' });
    const tarballs = WORKSPACES.map((workspace) => {
      const out = execFileSync('npm', ['pack', '--json', '--pack-destination', packDir], {
        cwd: join(ROOT, workspace),
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      return join(
        packDir,
        (JSON.parse(out.slice(out.indexOf('['))) as { filename: string }[])[0]?.filename ?? '',
      );
    });
    const app = join(scratch, 'app');
    const bare = join(scratch, 'bare');
    const gate402 = timedInstall(app, tarballs);
    const fastify = timedInstall(bare, ['fastify@^5']);
    rows.push({
      name: 'production install of gate402 (--omit=dev), size',
      value: gate402.bytes / MiB,
      unit: 'MiB',
      reference: { name: 'a bare Fastify app', value: fastify.bytes / MiB },
      target: '<= 250 MB',
      met: gate402.bytes <= 250e6,
    });
    rows.push({
      name: 'production install of gate402 (--omit=dev), time (warm npm cache)',
      value: gate402.ms / 1000,
      unit: 's',
      reference: { name: 'a bare Fastify app', value: fastify.ms / 1000 },
    });

    const bin = join(app, 'node_modules/gate402/bin/gate402.js');
    writeFileSync(
      join(bare, 'server.mjs'),
      "import Fastify from 'fastify';\nconst app = Fastify();\napp.get('/healthz', async () => ({ status: 'ok' }));\nawait app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });\n",
    );
    const bareStart = await timeToHealthz([join(bare, 'server.mjs')], bare, {});
    bareStart.child.kill('SIGKILL');
    const dataDir = join(scratch, 'data');
    const fresh = await timeToHealthz([bin, 'serve'], app, { DATA_DIR: dataDir });
    await stop(fresh.child);
    const existing = await timeToHealthz([bin, 'serve'], app, { DATA_DIR: dataDir });
    await new Promise((resolve) => setTimeout(resolve, 3_000)); // idle
    const rss = processTree(existing.child.pid ?? 0);
    await stop(existing.child);
    rows.push(
      {
        name: 'gate402 serve to /healthz, fresh DATA_DIR',
        value: fresh.ms / 1000,
        unit: 's',
        reference: { name: 'a bare Fastify server', value: bareStart.ms / 1000 },
      },
      {
        name: 'gate402 serve to /healthz, existing DATA_DIR',
        value: existing.ms / 1000,
        unit: 's',
        reference: { name: 'a bare Fastify server', value: bareStart.ms / 1000 },
        target: '<= 3 s',
        met: existing.ms <= 3_000,
      },
    );
    for (const { command, kib } of rss)
      rows.push({ name: `RSS at idle: ${command}`, value: kib / 1024, unit: 'MiB' });
    rows.push({
      name: 'RSS at idle: all of gate402 serve',
      value: rss.reduce((s, p) => s + p.kib, 0) / 1024,
      unit: 'MiB',
    });

    const cli = median(5, () => timed(() => spawnSync(process.execPath, [bin, '--help'], { cwd: app })));
    const node = median(5, () => timed(() => spawnSync(process.execPath, ['-e', ''], { cwd: app })));
    rows.push({
      name: 'one CLI command (gate402 --help)',
      value: cli,
      unit: 'ms',
      reference: { name: 'node -e ""', value: node },
      target: '<= 1 s',
      met: cli <= 1_000,
    });
    return rows;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
};
export default install;

/** A clone of HEAD installed with `npm ci`, as CI and Dockerfiles install: time and node_modules size. */
function freshCi(clone: string): BenchRow[] {
  execFileSync('git', ['clone', '--quiet', ROOT, clone]);
  const ms = timed(() =>
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: clone, stdio: 'ignore' }),
  );
  return [
    { name: 'fresh npm ci of the repository (warm npm cache)', value: ms / 1000, unit: 's' },
    { name: 'fresh npm ci: node_modules', value: bytesOf(join(clone, 'node_modules')) / MiB, unit: 'MiB' },
  ];
}

function timedInstall(dir: string, packages: string[]): { ms: number; bytes: number } {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'bench-app', private: true, type: 'module' }),
  );
  const ms = timed(() =>
    execFileSync('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', ...packages], {
      cwd: dir,
      stdio: 'ignore',
    }),
  );
  return { ms, bytes: bytesOf(join(dir, 'node_modules')) };
}

function bytesOf(dir: string): number {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
}

function timed(run: () => unknown): number {
  const started = performance.now();
  run();
  return performance.now() - started;
}

function median(rounds: number, measure: () => number): number {
  const values = Array.from({ length: rounds }, measure).sort((a, b) => a - b);
  return values[Math.floor(rounds / 2)] ?? 0;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function timeToHealthz(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ ms: number; child: ChildProcess }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd,
    stdio: 'ignore',
    env: {
      ...process.env,
      ...env,
      PORT: String(port),
      LOCALNET_PORT: String(await freePort()),
      ANVIL_PORT: String(await freePort()),
      DATABASE_URL: '',
      REDIS_URL: '',
      LOG_LEVEL: 'warn',
      NODE_OPTIONS: '',
    },
  });
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { ms: performance.now() - started, child };
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} stopped (${child.exitCode})`);
    if (performance.now() - started > 120_000) throw new Error(`${args.join(' ')}: no /healthz in 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** The RSS of `pid` and its descendants, from /proc. */
function processTree(pid: number): { command: string; kib: number }[] {
  const found: { command: string; kib: number }[] = [];
  const visit = (p: number) => {
    try {
      const status = readFileSync(`/proc/${p}/status`, 'utf8');
      const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      const command = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const name = command.some((c) => c.includes('localnet-child'))
        ? 'the localnet process'
        : command.some((c) => c.includes('anvil'))
          ? 'anvil'
          : p === pid
            ? 'the gateway process'
            : command.slice(0, 2).join(' ');
      if (kib > 0) found.push({ command: name, kib });
      const children = readFileSync(`/proc/${p}/task/${p}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean);
      for (const child of children) visit(Number(child));
    } catch {
      // gone meanwhile
    }
  };
  visit(pid);
  return found;
}
