// The export benchmark's gateway: gate402 as `npm start` runs it, on the SQLite file the benchmark
// seeded (BENCH_DATA_DIR). Prints its port, serves until its stdin closes, then prints its peak RSS.
import { loadConfig } from '../../packages/server/src/config.ts';
import { startServer } from '../../packages/server/src/server.ts';

const config = loadConfig({
  DATA_DIR: process.env.BENCH_DATA_DIR ?? '',
  PORT: '0',
  LOCALNET_PORT: '0',
  ANVIL_PORT: '0',
  LOG_LEVEL: 'warn',
  GATE402_DEMO: 'false',
});
const server = await startServer(config);
process.stdout.write(`PORT ${new URL(server.url).port}\n`);
process.stdin.resume();
process.stdin.on('end', async () => {
  // resourceUsage().maxRSS is in KiB.
  process.stdout.write(`MAXRSS ${process.resourceUsage().maxRSS}\n`);
  await server.close();
  process.exit(0);
});
