import { fileURLToPath } from 'node:url';

/**
 * The node arguments that run the `gate402` command from its TypeScript sources, as `npm start` does in
 * the repository: tests check the code they sit beside, not a build that may be older. The compiled
 * command (bin/gate402.js) is checked by the packaging test, from the packed tarballs.
 */
export const GATE402_COMMAND: readonly string[] = [
  '--conditions=@gate402/source',
  '--import',
  'tsx',
  fileURLToPath(new URL('../../src/cli/gate402.ts', import.meta.url)),
];
