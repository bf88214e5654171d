import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Where `vite build` writes the dashboard; the gateway serves this directory at /dashboard. */
export const DASHBOARD_DIST_DIR = fileURLToPath(new URL('../dist/', import.meta.url));

const CONFIG_FILE = fileURLToPath(new URL('../vite.config.ts', import.meta.url));

export function isDashboardBuilt(): boolean {
  return existsSync(new URL('../dist/index.html', import.meta.url));
}

/**
 * Builds the dashboard with Vite. `npm install` does this already (the repository's `prepare` script);
 * the gateway calls it at start only when the files are missing, e.g. after `npm install --ignore-scripts`.
 */
export async function buildDashboard(): Promise<void> {
  const { build } = await import('vite');
  await build({ configFile: CONFIG_FILE, logLevel: 'warn' });
}
