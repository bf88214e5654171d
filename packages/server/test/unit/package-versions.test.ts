import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

const ROOT = new URL('../../../../', import.meta.url);
const read = (path: string) =>
  JSON.parse(readFileSync(new URL(path, ROOT), 'utf8')) as {
    name: string;
    version: string;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    peerDependencies?: Record<string, string>;
  };
const PACKAGES = ['server', 'client', 'localnet', 'anvil', 'dashboard'].map((p) =>
  read(`packages/${p}/package.json`),
);

/** docs/releasing.md: the packages are released together, under one version. */
describe('package versions', () => {
  it('are the same for every package and the workspace root', () => {
    const versions = new Set([read('package.json').version, ...PACKAGES.map((p) => p.version)]);
    assert.equal(versions.size, 1, `versions: ${[...versions].join(', ')}`);
  });

  it("name each other's current version", () => {
    const names = new Set(PACKAGES.map((p) => p.name));
    for (const pkg of PACKAGES) {
      for (const deps of [pkg.dependencies, pkg.devDependencies, pkg.peerDependencies]) {
        for (const [name, range] of Object.entries(deps ?? {})) {
          if (names.has(name)) assert.equal(range, `^${pkg.version}`, `${pkg.name} → ${name}`);
        }
      }
    }
  });
});
