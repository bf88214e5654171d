import { fileURLToPath } from 'node:url';
import { reloadPaywallPageScript } from '../../src/browser-paywall/paywall-page.ts';

/**
 * Builds the browser paywall page's script (what `npm run build -w @gate402/client` does) from the
 * current sources, so a test never runs an older build.
 */
export async function buildPaywallPage(): Promise<void> {
  const { build } = await import('vite');
  await build({
    configFile: fileURLToPath(new URL('../../vite.paywall.config.ts', import.meta.url)),
    logLevel: 'warn',
  });
  reloadPaywallPageScript();
}
