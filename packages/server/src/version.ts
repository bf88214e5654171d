import { createRequire } from 'node:module';

/** The gateway's version, from packages/server/package.json. */
export const GATE402_VERSION: string = (
  createRequire(import.meta.url)('../package.json') as { version: string }
).version;
