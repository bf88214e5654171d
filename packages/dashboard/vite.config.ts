import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The gateway serves the build at /dashboard/ on its own port; every file comes from there (no CDN).
export default defineConfig({
  root: fileURLToPath(new URL('./web', import.meta.url)),
  base: '/dashboard/',
  publicDir: false,
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: fileURLToPath(new URL('./dist', import.meta.url)),
    emptyOutDir: true,
    // No inline data: URLs for assets, so the Content-Security-Policy can stay strict.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
});
