import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import solc from 'solc';

/**
 * The pinned solc (npm, offline) as the contract compilers use it: usdc-like-compiler.ts and
 * permit2-proxy-compiler.ts each compile one source with it and render their own committed artifact.
 */

/** One contract as the pinned solc compiled it. */
export interface CompiledSolidity {
  readonly abi: readonly unknown[];
  /** Creation code, 0x-prefixed. */
  readonly bytecode: `0x${string}`;
  /** Runtime code, 0x-prefixed: what the creation code leaves at the contract's address. */
  readonly runtimeCode: `0x${string}`;
  readonly compilerVersion: string;
}

export interface SolidityCompileOptions {
  /** Absolute path of the .sol file; the source is named by its base name, as in its imports. */
  readonly sourceFile: string;
  /** The contract to take from the source. */
  readonly contractName: string;
  /**
   * Drops the metadata hash, so the code depends on the source alone and not on its comments' bytes.
   * Off by default: it changes the code, and an artifact compiled with the hash must keep it.
   */
  readonly withoutMetadataHash?: boolean;
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts: Record<
    string,
    Record<
      string,
      { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }
    >
  >;
}

export function compileSolidity(options: SolidityCompileOptions): CompiledSolidity {
  const sourceName = basename(options.sourceFile);
  const input = {
    language: 'Solidity',
    sources: { [sourceName]: { content: readFileSync(options.sourceFile, 'utf8') } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      // Cancun runs on anvil and on every chain x402 uses today.
      evmVersion: 'cancun',
      ...(options.withoutMetadataHash === true
        ? { metadata: { bytecodeHash: 'none', appendCBOR: false } }
        : {}),
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const contract = output.contracts[sourceName]?.[options.contractName];
  if (contract === undefined) throw new Error(`solc produced no ${options.contractName} contract`);
  return {
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
    runtimeCode: `0x${contract.evm.deployedBytecode.object}`,
    compilerVersion: solc.version(),
  };
}

/** Writes a rendered artifact, formatted by the repository's formatter so `biome check` stays clean on it. */
export function writeArtifact(file: string, contents: string): void {
  writeFileSync(file, contents);
  execFileSync('npx', ['biome', 'format', '--write', file], { stdio: 'inherit' });
  console.log(`wrote ${file}`);
}
