import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The paywall page's script, one self-contained file the seller middleware inlines into the page (its
// Content-Security-Policy admits it by hash): nothing is loaded from anywhere at run time, and the
// package needs no bundler when installed.
export default defineConfig({
  publicDir: false,
  logLevel: 'warn',
  define: { 'process.env.NODE_ENV': JSON.stringify('production') },
  build: {
    outDir: fileURLToPath(new URL('./dist/paywall-page', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    minify: true,
    sourcemap: false,
    lib: {
      entry: fileURLToPath(new URL('./paywall-page/main.ts', import.meta.url)),
      formats: ['iife'],
      name: 'gate402Paywall',
      fileName: () => 'paywall.js',
    },
  },
});
