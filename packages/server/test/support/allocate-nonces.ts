/**
 * One gateway instance's share of a nonce race, run as its own process so that two instances meet on
 * one SQLite file the way two servers do (in one process, better-sqlite3 would wait for the file lock
 * synchronously and stall the very transaction it waits for).
 *
 *     node --import tsx allocate-nonces.ts <sqlite file> <network> <address> <count> <start at, Unix ms>
 *
 * Prints the allocated nonces as a JSON array of decimal strings.
 */
import { openStore } from '../../src/store/open-store.ts';

async function main(): Promise<void> {
  const [file = '', network = '', address = '', count = '0', startAt = '0'] = process.argv.slice(2);
  const { store } = await openStore({ kind: 'sqlite', file });
  try {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(startAt) - Date.now())));
    const nonces = await Promise.all(
      Array.from({ length: Number(count) }, () =>
        store.transaction((tx) => tx.nonces.allocate(network, address, 0n)),
      ),
    );
    process.stdout.write(JSON.stringify(nonces.map(String)));
  } finally {
    await store.close();
  }
}

await main();
