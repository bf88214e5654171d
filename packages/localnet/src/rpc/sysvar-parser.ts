// jsonParsed sysvars, as Agave's account decoder answers them (program "sysvar"): Clock, Rent,
// EpochSchedule and SlotHashes. Others stay base64, as Agave does for what it cannot parse.
import { encodeBase58 } from '../wire/base58.ts';

const CLOCK = 'SysvarC1ock11111111111111111111111111111111';
const RENT = 'SysvarRent111111111111111111111111111111111';
const EPOCH_SCHEDULE = 'SysvarEpochSchedu1e111111111111111111111111';
const SLOT_HASHES = 'SysvarS1otHashes111111111111111111111111111';

export function parseSysvar(address: string, data: Uint8Array): { type: string; info: unknown } | undefined {
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  try {
    switch (address) {
      case CLOCK:
        return {
          type: 'clock',
          info: {
            slot: view.readBigUInt64LE(0),
            epoch: view.readBigUInt64LE(16),
            epochStartTimestamp: view.readBigInt64LE(8),
            leaderScheduleEpoch: view.readBigUInt64LE(24),
            unixTimestamp: view.readBigInt64LE(32),
          },
        };
      case RENT:
        return {
          type: 'rent',
          info: {
            // A StringAmount in Agave's UiRent.
            lamportsPerByteYear: view.readBigUInt64LE(0).toString(),
            exemptionThreshold: view.readDoubleLE(8),
            burnPercent: view.readUInt8(16),
          },
        };
      case EPOCH_SCHEDULE:
        return {
          type: 'epochSchedule',
          info: {
            slotsPerEpoch: view.readBigUInt64LE(0),
            leaderScheduleSlotOffset: view.readBigUInt64LE(8),
            warmup: view.readUInt8(16) === 1,
            firstNormalEpoch: view.readBigUInt64LE(17),
            firstNormalSlot: view.readBigUInt64LE(25),
          },
        };
      case SLOT_HASHES: {
        const count = Number(view.readBigUInt64LE(0));
        const entries: { slot: bigint; hash: string }[] = [];
        for (let i = 0; i < count; i++) {
          const at = 8 + i * 40;
          entries.push({
            slot: view.readBigUInt64LE(at),
            hash: encodeBase58(data.subarray(at + 8, at + 40)),
          });
        }
        return { type: 'slotHashes', info: entries };
      }
      default:
        return undefined;
    }
  } catch {
    // Shorter than its layout: answered in base64, as Agave answers what it cannot parse.
    return undefined;
  }
}
