import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isConnectionFailure } from '../../src/store/kysely/guarded-pg-pool.ts';
import { isStorageUnavailable, StorageUnavailableError } from '../../src/store/storage-unavailable.ts';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('storage failures told apart from statement errors', () => {
  it('takes connection, server and time-limit failures for an outage', () => {
    for (const error of [
      pgError('57P01', 'terminating connection due to administrator command'),
      pgError('57P03', 'the database system is starting up'),
      pgError('57014', 'canceling statement due to statement timeout'),
      pgError('08006'),
      pgError('53300', 'sorry, too many clients already'),
      pgError('25P03'),
      pgError('ECONNREFUSED'),
      pgError('ECONNRESET'),
      new Error('Connection terminated unexpectedly'),
      new Error('Client has encountered a connection error and is not queryable'),
      new Error('timeout exceeded when trying to connect'),
    ]) {
      assert.equal(isConnectionFailure(error), true, error.message);
    }
  });

  it('leaves errors of the statement alone: they are answers, and retrying changes nothing', () => {
    for (const error of [
      pgError('23505', 'duplicate key value violates unique constraint'),
      pgError('42P01', 'relation does not exist'),
      pgError('22P02'),
      pgError('40P01', 'deadlock detected'),
      new Error('something else'),
    ]) {
      assert.equal(isConnectionFailure(error), false, error.message);
    }
    assert.equal(isConnectionFailure('Connection terminated'), false);
  });

  it('finds an outage anywhere in the cause chain, and SQLite busy', () => {
    const wrapped = new Error('outer', {
      cause: new Error('middle', { cause: new StorageUnavailableError('x') }),
    });
    assert.equal(isStorageUnavailable(wrapped), true);
    assert.equal(isStorageUnavailable(pgError('SQLITE_BUSY')), true);
    assert.equal(isStorageUnavailable(pgError('SQLITE_BUSY_SNAPSHOT')), true);
    assert.equal(isStorageUnavailable(pgError('SQLITE_CONSTRAINT_UNIQUE')), false);
    assert.equal(
      isStorageUnavailable(pgError('57P01')),
      false,
      'raw pg errors are translated where queries run',
    );
    assert.equal(isStorageUnavailable(undefined), false);
  });
});
