import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PeriodicWorker } from '../../src/scheduling/periodic-worker.ts';

/** A pass that should not fail: its error rejects stop(), which fails the test. */
const rethrow = (error: unknown) => {
  throw error;
};

describe('PeriodicWorker', () => {
  it('runs one pass at a time: the next is scheduled when the previous ended', async () => {
    let running = 0;
    let overlapped = false;
    let passes = 0;
    const worker = new PeriodicWorker(
      async () => {
        running += 1;
        overlapped ||= running > 1;
        await sleep(20);
        running -= 1;
        passes += 1;
      },
      { intervalMs: 1, onError: rethrow },
    );
    worker.start();
    await sleep(150);
    await worker.stop();
    assert.equal(overlapped, false);
    assert.ok(passes >= 2, `${passes} passes in 150 ms of 20 ms passes`);
  });

  it('reports a failed pass and runs the next one as usual', async () => {
    const errors: unknown[] = [];
    let passes = 0;
    const worker = new PeriodicWorker(
      async () => {
        passes += 1;
        if (passes === 1) throw new Error('first pass failed');
      },
      { intervalMs: 1, onError: (error) => errors.push(error) },
    );
    worker.start();
    while (passes < 3) await sleep(2);
    await worker.stop();
    assert.equal(errors.length, 1);
    assert.equal((errors[0] as Error).message, 'first pass failed');
  });

  it('backs off after failed passes, up to its ceiling, and returns to the interval after a success', async () => {
    const waits: number[] = [];
    const started: number[] = [];
    let passes = 0;
    const worker: PeriodicWorker = new PeriodicWorker(
      async () => {
        waits.push(worker.nextWaitMs);
        started.push(performance.now());
        passes += 1;
        if (passes <= 3) throw new Error('storage unavailable');
      },
      { intervalMs: 10, maxBackoffMs: 40, onError: () => {} },
    );
    worker.start();
    while (passes < 5) await sleep(2);
    await worker.stop();
    // The wait before each pass: 10, then 20, 40 and 40 (the ceiling) after one, two, three failures,
    // then 10 again after the fourth pass succeeded.
    assert.deepEqual(waits, [10, 20, 40, 40, 10]);
    const first = started[0] ?? 0;
    const fifth = started[4] ?? 0;
    assert.ok(fifth - first >= 105, `passes 1 to 5 took ${fifth - first} ms, the waits add up to 110`);
  });

  it('stop() waits for the pass under way, and no pass starts after it', async () => {
    let started = 0;
    let finished = 0;
    const worker = new PeriodicWorker(
      async () => {
        started += 1;
        await sleep(30);
        finished += 1;
      },
      { intervalMs: 1, onError: rethrow },
    );
    worker.start();
    while (started === 0) await sleep(1);
    await worker.stop();
    assert.deepEqual({ started, finished }, { started: 1, finished: 1 });
    await sleep(20);
    assert.equal(started, 1);
  });

  it('stop() before the first pass runs none', async () => {
    let passes = 0;
    const worker = new PeriodicWorker(
      async () => {
        passes += 1;
      },
      { intervalMs: 5, onError: rethrow },
    );
    worker.start();
    await worker.stop();
    await sleep(20);
    assert.equal(passes, 0);
  });
});
