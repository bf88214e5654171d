import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  EXACT_PERMIT2_PROXY_ABI,
  EXACT_PERMIT2_PROXY_RUNTIME_CODE,
  EXACT_PERMIT2_PROXY_RUNTIME_CODE_HASH,
} from '../../src/permit2-proxy-artifact.ts';
import {
  UPTO_PERMIT2_PROXY_ABI,
  UPTO_PERMIT2_PROXY_RUNTIME_CODE,
  UPTO_PERMIT2_PROXY_RUNTIME_CODE_HASH,
} from '../../src/upto-proxy-artifact.ts';
import {
  USDC_LIKE_ABI,
  USDC_LIKE_BYTECODE,
  USDC_LIKE_RUNTIME_CODE_HASH,
} from '../../src/usdc-like-artifact.ts';
import { compileExactPermit2Proxy } from '../../tools/contracts/permit2-proxy-compiler.ts';
import { compileUptoPermit2Proxy } from '../../tools/contracts/upto-proxy-compiler.ts';
import { compileUsdcLike } from '../../tools/contracts/usdc-like-compiler.ts';

// The committed artifacts are what the embedded anvil carries; the compiler (solc, 8 MB) never loads
// at run time, so these checks are what ties the bytes to the Solidity sources.

describe('the USDC-like token artifact', () => {
  it('is exactly what the pinned solc makes of contracts/UsdcLike.sol', () => {
    const compiled = compileUsdcLike();
    assert.equal(compiled.compilerVersion.startsWith('0.8.37+'), true);
    assert.deepEqual(USDC_LIKE_ABI, compiled.abi, 'run: npm run compile:contracts -w @gate402/anvil');
    assert.equal(USDC_LIKE_BYTECODE, compiled.bytecode);
    assert.equal(USDC_LIKE_RUNTIME_CODE_HASH, compiled.runtimeCodeHash);
  });
});

describe('the exact Permit2 proxy artifact', () => {
  it('is exactly what the pinned solc makes of contracts/ExactPermit2Proxy.sol', () => {
    const compiled = compileExactPermit2Proxy();
    assert.equal(compiled.compilerVersion.startsWith('0.8.37+'), true);
    assert.deepEqual(
      EXACT_PERMIT2_PROXY_ABI,
      compiled.abi,
      'run: npm run compile:contracts -w @gate402/anvil',
    );
    assert.equal(EXACT_PERMIT2_PROXY_RUNTIME_CODE, compiled.runtimeCode);
    assert.equal(EXACT_PERMIT2_PROXY_RUNTIME_CODE_HASH, compiled.runtimeCodeHash);
  });
});

describe('the upto Permit2 proxy artifact', () => {
  it('is exactly what the pinned solc makes of contracts/UptoPermit2Proxy.sol', () => {
    const compiled = compileUptoPermit2Proxy();
    assert.equal(compiled.compilerVersion.startsWith('0.8.37+'), true);
    assert.deepEqual(
      UPTO_PERMIT2_PROXY_ABI,
      compiled.abi,
      'run: npm run compile:contracts -w @gate402/anvil',
    );
    assert.equal(UPTO_PERMIT2_PROXY_RUNTIME_CODE, compiled.runtimeCode);
    assert.equal(UPTO_PERMIT2_PROXY_RUNTIME_CODE_HASH, compiled.runtimeCodeHash);
  });
});
