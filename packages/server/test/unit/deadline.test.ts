import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { withDeadline } from '../../src/chains/deadline.ts';

/** Resolves with the signal's reason once it aborts. */
const abortReason = (signal: AbortSignal) =>
  new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)));

describe('withDeadline', () => {
  it('aborts the work at its deadline with a TimeoutError, garbage collected all along', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const giveUp = new AbortController();
    const collecting = setInterval(gc, 10);
    try {
      const started = performance.now();
      // Bounded itself: with a deadline a collection can cancel, the work would never end.
      const tooLate = sleep(5_000, undefined, { signal: giveUp.signal }).then(
        () => assert.fail('the 200 ms deadline had not fired after 5 s'),
        () => undefined, // given up once the test is over
      );
      const reason = await Promise.race([
        withDeadline(200, new AbortController().signal, abortReason),
        tooLate,
      ]);
      assert.ok(reason instanceof DOMException && reason.name === 'TimeoutError', String(reason));
      assert.ok(performance.now() - started >= 190, 'not before the deadline');
    } finally {
      giveUp.abort();
      clearInterval(collecting);
    }
  });

  it('aborts the work with the reason of the signal that cancels it', async () => {
    const cancel = new AbortController();
    const waiting = withDeadline(60_000, cancel.signal, abortReason);
    cancel.abort(new Error('closing'));
    assert.equal(((await waiting) as Error).message, 'closing');
  });

  it('starts the work already aborted when the cancelling signal has aborted', async () => {
    const seen = await withDeadline(60_000, AbortSignal.abort('gone'), async (signal) => signal.reason);
    assert.equal(seen, 'gone');
  });

  it('answers what the work answers, and rethrows what it throws', async () => {
    assert.equal(await withDeadline(1_000, undefined, async () => 42), 42);
    await assert.rejects(
      withDeadline(1_000, undefined, async () => {
        throw new Error('refused');
      }),
      /refused/,
    );
  });
});
