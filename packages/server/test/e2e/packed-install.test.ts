import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
/** The published packages, in the order npm installs their tarballs together. */
const WORKSPACES = [
  'packages/localnet',
  'packages/anvil',
  'packages/dashboard',
  'packages/server',
  'packages/client',
];
/** What the README's examples import besides gate402's packages. */
const EXAMPLE_DEPENDENCIES = ['express@^5', 'fastify@^5', 'hono@^4', '@hono/node-server@^1'];
const INSTALL_TIMEOUT_MS = 600_000;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The README's examples, by the file name on their first line, saved as plain JavaScript modules. */
function readmeExamples(): Map<string, string> {
  const readme = readFileSync(join(ROOT, 'packages/client/README.md'), 'utf8');
  const examples = new Map<string, string>();
  for (const [, code = ''] of readme.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const name = /^\/\/ ([\w-]+)\.ts\n/.exec(code)?.[1];
    if (name !== undefined) examples.set(`${name}.mjs`, code);
  }
  return examples;
}

/**
 * gate402 as users install it: every workspace packed with `npm pack`, the tarballs installed into a
 * scratch project outside the repository with `--omit=dev` (no TypeScript, no tsx, no build tools),
 * then `npx gate402` started from there and the client README's examples run with plain `node`.
 */
describe('the packed packages, installed outside the repository', () => {
  const packDir = mkdtempSync(join(tmpdir(), 'gate402-pack-'));
  const project = mkdtempSync(join(tmpdir(), 'gate402-user-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'gate402-user-data-'));
  const tarballs = new Map<string, string>();
  const children: ChildProcess[] = [];
  let env: NodeJS.ProcessEnv;
  let url = '';

  before(
    async () => {
      // What `npm install` in the repository compiles (the root's prepare), as it is now.
      execFileSync(
        process.execPath,
        [join(ROOT, 'node_modules/typescript/bin/tsc'), '-b', 'tsconfig.build.json'],
        {
          cwd: ROOT,
          stdio: 'inherit',
        },
      );
      for (const workspace of WORKSPACES) {
        const out = execFileSync('npm', ['pack', '--json', '--pack-destination', packDir], {
          cwd: join(ROOT, workspace),
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        const [packed] = JSON.parse(out.slice(out.indexOf('['))) as { name: string; filename: string }[];
        assert.ok(packed);
        tarballs.set(packed.name, join(packDir, packed.filename));
      }
      writeFileSync(
        join(project, 'package.json'),
        JSON.stringify({ name: 'a-user-app', private: true, type: 'module' }),
      );
      const install = (packages: string[]) => {
        const run = spawnSync('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', ...packages], {
          cwd: project,
          encoding: 'utf8',
          timeout: INSTALL_TIMEOUT_MS,
        });
        assert.equal(run.status, 0, `npm install failed:\n${run.stdout}\n${run.stderr}`);
        return run.stderr;
      };
      // Every package gate402 pulls supports this Node, but commander@15: @solana/kit 8 (which says Node
      // >= 20.18) pins it through @solana/errors, for that package's command-line decoder, which gate402
      // never loads.
      const warned = install([...tarballs.values()]);
      const unsupported = [...warned.matchAll(/EBADENGINE\s+package: '([^']+)'/g)].map((m) => m[1]);
      assert.deepEqual(
        unsupported.filter((p) => p !== 'commander@15.0.0'),
        [],
        warned,
      );
      // Then what the examples need, as a user adds their framework.
      install(EXAMPLE_DEPENDENCIES);

      const port = await freePort();
      env = {
        ...process.env,
        DATA_DIR: dataDir,
        PORT: String(port),
        LOCALNET_PORT: String(await freePort()),
        ANVIL_PORT: String(await freePort()),
        LOCALNET_SLOT_MS: '50',
        DATABASE_URL: '',
        REDIS_URL: '',
        LOG_LEVEL: 'warn',
        NODE_OPTIONS: '',
      };
      url = `http://127.0.0.1:${port}`;
    },
    { timeout: INSTALL_TIMEOUT_MS + 120_000 },
  );
  after(() => {
    for (const child of children) child.kill('SIGKILL');
    for (const dir of [packDir, project, dataDir]) rmSync(dir, { recursive: true, force: true });
  });

  const node = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, args, {
      cwd: project,
      env: { ...env, ...extra },
      encoding: 'utf8',
      timeout: 60_000,
    });
  function start(args: string[], extra: NodeJS.ProcessEnv = {}): ChildProcess & { output: () => string } {
    const child = spawn(process.execPath, args, { cwd: project, env: { ...env, ...extra } });
    children.push(child);
    let output = '';
    child.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    return Object.assign(child, { output: () => output });
  }
  async function until(what: string, condition: () => Promise<boolean> | boolean, ms = 60_000) {
    const deadline = Date.now() + ms;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('ships compiled JavaScript with declarations, and no TypeScript sources, build tools or test packages', () => {
    for (const [name, tarball] of tarballs) {
      const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
      assert.ok(!files.some((f) => /\.ts$/.test(f) && !/\.d\.ts$/.test(f)), `${name} ships no .ts sources`);
      if (name !== '@gate402/dashboard') {
        assert.ok(files.includes('package/dist/index.js'), `${name} ships dist/index.js`);
        assert.ok(files.includes('package/dist/index.d.ts'), `${name} ships its declarations`);
      }
    }
    const installed = readdirSync(join(project, 'node_modules'));
    for (const tool of [
      'tsx',
      'typescript',
      'solc',
      'vite',
      '@uniswap',
      'x402',
      'x402-fetch',
      '@coral-xyz',
    ]) {
      assert.ok(!installed.includes(tool), `a production install does not pull ${tool}`);
    }
  });

  it('passes publint and Are the Types Wrong (ESM only: Node >= 20.19 can require() it too)', () => {
    const bin = (name: string) => join(ROOT, 'node_modules/.bin', name);
    for (const workspace of WORKSPACES) {
      const lint = spawnSync(bin('publint'), ['--strict', join(ROOT, workspace)], { encoding: 'utf8' });
      assert.equal(lint.status, 0, `publint ${workspace}:\n${lint.stdout}${lint.stderr}`);
      assert.match(lint.stdout, /All good!/, `publint ${workspace}:\n${lint.stdout}`);
    }
    for (const [name, tarball] of tarballs) {
      if (name === '@gate402/dashboard') continue; // no types: the gateway serves its files
      const types = spawnSync(bin('attw'), [tarball, '--profile', 'esm-only', '--format', 'ascii'], {
        encoding: 'utf8',
      });
      assert.equal(types.status, 0, `attw ${name}:\n${types.stdout}${types.stderr}`);
    }
  });

  it('the installed gate402 command (node_modules/.bin/gate402) serves: /healthz and /readyz answer', async () => {
    const server = start([join(project, 'node_modules/gate402/bin/gate402.js'), 'serve']);
    const healthy = async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok === true;
    await until(`/healthz (${server.output()})`, async () => server.exitCode === null && (await healthy()));
    await until('/readyz', async () => (await fetch(`${url}/readyz`)).ok);
    // The guides travel in the package: served offline from the installed copy.
    const guide = await fetch(`${url}/docs/guide/finality.md`);
    assert.equal(guide.status, 200);
    assert.match(await guide.text(), /Finality and reorgs/);
    const help = node([join(project, 'node_modules/gate402/bin/gate402.js'), '--help']);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /serve/);
  });

  it("runs the client README's examples with plain node against it", async () => {
    const examples = readmeExamples();
    assert.deepEqual([...examples.keys()].sort(), [
      'buyer.mjs',
      'sdk.mjs',
      'seller-express.mjs',
      'seller-fastify.mjs',
      'seller-hono.mjs',
      'seller-revoke.mjs',
    ]);
    for (const [name, code] of examples) writeFileSync(join(project, name), code);
    const bin = join(project, 'node_modules/gate402/bin/gate402.js');
    const account = JSON.parse(
      node([bin, 'accounts', 'create', '--name', 'user', '--plan', 'standard', '--json']).stdout,
    );
    const key = JSON.parse(
      node([bin, 'keys', 'create', '--account', account.id, '--name', 'app', '--json']).stdout,
    ).key;
    const api = { GATE402_URL: url, GATE402_API_KEY: key };

    const sdk = node(['sdk.mjs'], api);
    assert.equal(sdk.status, 0, `${sdk.stdout}\n${sdk.stderr}`);
    assert.match(sdk.stdout, /^sent confirmed 0\.01 SOL$/m);

    for (const seller of ['seller-express.mjs', 'seller-fastify.mjs', 'seller-hono.mjs']) {
      const port = await freePort();
      const app = start([seller], { ...api, PORT: String(port) });
      await until(`${seller} listening (${app.output()})`, () => app.output().includes('listening on'));
      const bought = node(['buyer.mjs'], { ...api, RESOURCE_URL: `http://localhost:${port}/weather` });
      assert.equal(bought.status, 0, `${bought.stdout}\n${bought.stderr}`);
      assert.match(bought.stdout, /^200 \{"forecast":"sunny","paidBy":"\w+"\}$/m, seller);
      app.kill();
    }
    assert.ok(existsSync(join(project, 'node_modules/@gate402/client/dist/express.d.ts')));
  });
});
