import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/gateway.ts';
import { chooseLogFormat, prettyLogLine } from '../../src/log-format.ts';

const AT = new Date(2026, 10, 28, 9, 5, 7, 42).getTime();

function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

describe('log format', () => {
  it('is LOG_FORMAT when set, else pretty on a terminal and JSON elsewhere', () => {
    assert.equal(chooseLogFormat(undefined, true), 'pretty');
    assert.equal(chooseLogFormat(undefined, false), 'json');
    assert.equal(chooseLogFormat('json', true), 'json');
    assert.equal(chooseLogFormat('pretty', false), 'pretty');
  });

  it('writes one line per entry: time, level, message, the other fields', () => {
    const line = JSON.stringify({
      level: 30,
      time: AT,
      pid: 1,
      hostname: 'h',
      msg: 'storage migrated',
      storage: '/data/gate402.sqlite',
      migrated: ['a', 'b', 'c', 'd'],
    });
    assert.equal(
      prettyLogLine(line, { colors: false }),
      '09:05:07.042 INFO  storage migrated  storage=/data/gate402.sqlite migrated=[a, b, … 4 in all]\n',
    );
    const warn = JSON.stringify({
      level: 40,
      time: AT,
      msg: 'odd',
      note: 'two words',
      n: 3,
      nested: { x: 1 },
    });
    assert.equal(
      prettyLogLine(warn, { colors: false }),
      '09:05:07.042 WARN  odd  note="two words" n=3 nested={"x":1}\n',
    );
  });

  it('reads requests, their answers and errors the way people say them', () => {
    const incoming = JSON.stringify({
      level: 30,
      time: AT,
      reqId: 'req_1',
      req: { method: 'GET', url: '/account', host: 'h', remoteAddress: '127.0.0.1', remotePort: 5 },
      msg: 'incoming request',
    });
    assert.equal(
      prettyLogLine(incoming, { colors: false }),
      '09:05:07.042 INFO  incoming request GET /account from 127.0.0.1  reqId=req_1\n',
    );
    const completed = JSON.stringify({
      level: 30,
      time: AT,
      reqId: 'req_1',
      res: { statusCode: 401 },
      responseTime: 8.44,
      msg: 'request completed',
    });
    assert.equal(
      prettyLogLine(completed, { colors: false }),
      '09:05:07.042 INFO  request completed 401 in 8.4 ms  reqId=req_1\n',
    );
    const failed = JSON.stringify({
      level: 50,
      time: AT,
      err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (x.ts:1:1)' },
      msg: 'redis connection problem',
    });
    assert.equal(
      prettyLogLine(failed, { colors: false }),
      '09:05:07.042 ERROR redis connection problem  err=boom\n    at f (x.ts:1:1)\n',
    );
    assert.equal(
      prettyLogLine(JSON.stringify({ level: 30, time: AT, msg: 'hi' }), { colors: true }),
      '\x1b[2m09:05:07.042\x1b[0m \x1b[32mINFO \x1b[0m hi\n',
    );
    assert.equal(prettyLogLine('not json', { colors: false }), 'not json\n');
  });

  it('keeps secrets redacted in pretty lines, as in JSON', () => {
    const { stream, text } = capture();
    const logger = createLogger({ logLevel: 'info', logFormat: 'pretty' }, stream);
    logger.info(
      { headers: { authorization: 'Bearer g402_sk_secret' }, password: 'hunter2hunter2', account: 'acct_1' },
      'careless',
    );
    logger.debug('below the level');
    assert.match(
      text(),
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}careless {2}headers=\{"authorization":"\[redacted\]"\} password=\[redacted\] account=acct_1\n$/,
    );
  });
});
