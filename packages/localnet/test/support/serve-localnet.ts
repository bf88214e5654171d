// A localnet in its own process, for tests that kill it: `node --import tsx serve-localnet.ts <cli args>`.
import { runLocalnetCli } from '../../src/index.ts';

await runLocalnetCli(process.argv.slice(2));
