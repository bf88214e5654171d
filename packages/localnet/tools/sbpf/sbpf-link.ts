// A minimal linker from one relocatable ELF object of stock LLVM's `bpf` target (clang -target bpf
// -mcpu=v1 -c) to a Solana program: an SBPF v0 shared object as the runtime's loader accepts it
// (e_machine EM_BPF, e_flags 0, ET_DYN). Stock ld.lld cannot do this: it has no R_BPF_64_32 and no
// dynamic relocations for BPF.
//
// Layout: ELF header, program headers, .text, .rodata (all read-only input sections merged),
// .dynsym, .dynstr, .rel.dyn, .dynamic, .shstrtab, section headers; every section's address equals
// its file offset, in ascending order (the loader insists). What the linker resolves itself:
// - R_BPF_64_64 (lddw of a .rodata or .text address): the absolute address MM_PROGRAM_START + offset
//   is written into the instruction pair, so no load-time relocation is needed;
// - R_BPF_64_32 against a function defined in the object: a pc-relative call immediate, which the
//   loader turns into its own function key.
// What the loader resolves: R_BPF_64_32 against an undefined `sol_*` symbol (a syscall), kept as a
// dynamic relocation against .dynsym with the call immediate -1; the loader writes the murmur3 hash
// of the name. Writable sections (.data, .bss) are refused, as the runtime refuses them.

const MM_PROGRAM_START = 0x1_0000_0000n;
const R_BPF_64_64 = 1;
const R_BPF_64_32 = 10;
const SHT_PROGBITS = 1;
const SHT_SYMTAB = 2;
const SHT_NOBITS = 8;
const SHT_REL = 9;
const SHF_WRITE = 1n;
const SHF_ALLOC = 2n;
const SHF_EXECINSTR = 4n;

interface Section {
  name: string;
  type: number;
  flags: bigint;
  offset: number;
  size: number;
  link: number;
  info: number;
  align: number;
}

interface SymbolEntry {
  name: string;
  shndx: number;
  value: number;
}

function cString(buf: Buffer, offset: number): string {
  let end = offset;
  while (buf[end] !== 0) end++;
  return buf.subarray(offset, end).toString('latin1');
}

function parseObject(buf: Buffer): { sections: Section[]; symbols: SymbolEntry[] } {
  if (buf.readUInt32BE(0) !== 0x7f454c46 || buf[4] !== 2 || buf[5] !== 1)
    throw new Error('not a 64-bit little-endian ELF object');
  if (buf.readUInt16LE(16) !== 1 || buf.readUInt16LE(18) !== 247)
    throw new Error('not a relocatable object of the bpf target');
  const shoff = Number(buf.readBigUInt64LE(0x28));
  const shentsize = buf.readUInt16LE(0x3a);
  const shnum = buf.readUInt16LE(0x3c);
  const shstrndx = buf.readUInt16LE(0x3e);
  const raw = [];
  for (let i = 0; i < shnum; i++) {
    const o = shoff + i * shentsize;
    raw.push({
      nameOffset: buf.readUInt32LE(o),
      type: buf.readUInt32LE(o + 4),
      flags: buf.readBigUInt64LE(o + 8),
      offset: Number(buf.readBigUInt64LE(o + 24)),
      size: Number(buf.readBigUInt64LE(o + 32)),
      link: buf.readUInt32LE(o + 40),
      info: buf.readUInt32LE(o + 44),
      align: Number(buf.readBigUInt64LE(o + 48)),
    });
  }
  const names = raw[shstrndx];
  if (!names) throw new Error('no section name table');
  const sections = raw.map(({ nameOffset, ...s }) => ({
    ...s,
    name: cString(buf, names.offset + nameOffset),
  }));
  const symtab = sections.find((s) => s.type === SHT_SYMTAB);
  const strtab = symtab ? sections[symtab.link] : undefined;
  if (!symtab || !strtab) throw new Error('no symbol table');
  const symbols: SymbolEntry[] = [];
  for (let o = symtab.offset; o < symtab.offset + symtab.size; o += 24) {
    symbols.push({
      name: cString(buf, strtab.offset + buf.readUInt32LE(o)),
      shndx: buf.readUInt16LE(o + 6),
      value: Number(buf.readBigUInt64LE(o + 8)),
    });
  }
  return { sections, symbols };
}

const alignUp = (n: number, a: number) => Math.ceil(n / a) * a;

/** Links `object` (its `entrypoint` function is the program's entry) into an SBPF v0 program ELF. */
export function linkSbpf(objectBytes: Uint8Array): Uint8Array {
  const input = Buffer.from(objectBytes);
  const { sections, symbols } = parseObject(input);
  for (const s of sections) {
    if ((s.flags & SHF_ALLOC) !== 0n && ((s.flags & SHF_WRITE) !== 0n || s.type === SHT_NOBITS) && s.size > 0)
      throw new Error(`writable section ${s.name} is not supported by the runtime`);
  }
  const indexed = sections.map((s, index) => ({ s, index }));
  const text = indexed.filter(({ s }) => s.type === SHT_PROGBITS && (s.flags & SHF_EXECINSTR) !== 0n);
  const rodata = indexed.filter(
    ({ s }) => s.type === SHT_PROGBITS && (s.flags & SHF_ALLOC) !== 0n && (s.flags & SHF_EXECINSTR) === 0n,
  );
  const phnum = 3;
  const placed = new Map<number, number>();
  let offset = 64 + phnum * 56;
  const textStart = alignUp(offset, 8);
  offset = textStart;
  for (const { s, index } of text) {
    offset = alignUp(offset, Math.max(8, s.align));
    placed.set(index, offset);
    offset += s.size;
  }
  const textEnd = offset;
  const roStart = alignUp(offset, 8);
  offset = roStart;
  for (const { s, index } of rodata) {
    offset = alignUp(offset, Math.max(1, s.align));
    placed.set(index, offset);
    offset += s.size;
  }
  const roEnd = offset;
  const out = Buffer.alloc(roEnd + 64 * 1024 + input.length);
  for (const [index, at] of placed) {
    const s = sections[index] as Section;
    input.copy(out, at, s.offset, s.offset + s.size);
  }

  const syscalls: string[] = [];
  const dynamicRelocations: { offset: number; symbol: number }[] = [];
  for (const rel of sections.filter((s) => s.type === SHT_REL)) {
    const target = sections[rel.info] as Section;
    const base = placed.get(rel.info);
    if (base === undefined) {
      if ((target.flags & SHF_ALLOC) === 0n) continue; // debug info
      throw new Error(`relocations in ${target.name} are not supported`);
    }
    if ((target.flags & SHF_EXECINSTR) === 0n) throw new Error(`relocations in data section ${target.name}`);
    for (let o = rel.offset; o < rel.offset + rel.size; o += 16) {
      const at = base + Number(input.readBigUInt64LE(o));
      const info = input.readBigUInt64LE(o + 8);
      const type = Number(info & 0xffffffffn);
      const symbol = symbols[Number(info >> 32n)];
      if (!symbol) throw new Error('relocation against a missing symbol');
      if (type === R_BPF_64_64) {
        const symbolBase = placed.get(symbol.shndx);
        if (symbolBase === undefined)
          throw new Error(`address of ${symbol.name || 'a section'} outside the program`);
        const addend = BigInt(out.readUInt32LE(at + 4)) | (BigInt(out.readUInt32LE(at + 12)) << 32n);
        const address = MM_PROGRAM_START + BigInt(symbolBase + symbol.value) + addend;
        out.writeUInt32LE(Number(address & 0xffffffffn), at + 4);
        out.writeUInt32LE(Number(address >> 32n), at + 12);
      } else if (type === R_BPF_64_32 && symbol.shndx === 0) {
        if (!symbol.name.startsWith('sol_'))
          throw new Error(`undefined symbol ${symbol.name} (not a syscall)`);
        let k = syscalls.indexOf(symbol.name);
        if (k < 0) k = syscalls.push(symbol.name) - 1;
        dynamicRelocations.push({ offset: at, symbol: k + 1 });
        out.writeInt32LE(-1, at + 4);
      } else if (type === R_BPF_64_32) {
        const symbolBase = placed.get(symbol.shndx);
        if (symbolBase === undefined || symbolBase < textStart || symbolBase >= textEnd)
          throw new Error(`call to ${symbol.name} outside .text`);
        const targetPc = (symbolBase + symbol.value - textStart) / 8;
        const pc = (at - textStart) / 8;
        out.writeInt32LE(targetPc - pc - 1, at + 4);
      } else {
        throw new Error(`unsupported relocation type ${type} against ${symbol.name}`);
      }
    }
  }

  // .dynsym, .dynstr, .rel.dyn, .dynamic
  const dynsymOffset = alignUp(roEnd, 8);
  const dynsymSize = (syscalls.length + 1) * 24;
  const dynstrOffset = dynsymOffset + dynsymSize;
  let dynstrSize = 1;
  for (const [k, name] of syscalls.entries()) {
    const o = dynsymOffset + (k + 1) * 24;
    out.writeUInt32LE(dynstrSize, o);
    out[o + 4] = 0x10; // STB_GLOBAL, STT_NOTYPE, undefined
    out.write(name, dynstrOffset + dynstrSize, 'latin1');
    dynstrSize += name.length + 1;
  }
  const relOffset = alignUp(dynstrOffset + dynstrSize, 8);
  for (const [k, r] of dynamicRelocations.entries()) {
    out.writeBigUInt64LE(BigInt(r.offset), relOffset + k * 16);
    out.writeBigUInt64LE((BigInt(r.symbol) << 32n) | BigInt(R_BPF_64_32), relOffset + k * 16 + 8);
  }
  const relSize = dynamicRelocations.length * 16;
  const dynamicOffset = alignUp(relOffset + relSize, 8);
  const dynamic: [number, number][] = [
    [17, relOffset], // DT_REL
    [18, relSize], // DT_RELSZ
    [19, 16], // DT_RELENT
    [6, dynsymOffset], // DT_SYMTAB
    [11, 24], // DT_SYMENT
    [5, dynstrOffset], // DT_STRTAB
    [10, dynstrSize], // DT_STRSZ
    [22, 0], // DT_TEXTREL
    [0, 0], // DT_NULL
  ];
  for (const [k, [tag, value]] of dynamic.entries()) {
    out.writeBigUInt64LE(BigInt(tag), dynamicOffset + k * 16);
    out.writeBigUInt64LE(BigInt(value), dynamicOffset + k * 16 + 8);
  }
  const dynamicSize = dynamic.length * 16;

  // Section headers: name, type, flags, offset (= address), size, link, info, align, entsize.
  const table: [string, number, number, number, number, number, number, number, number][] = [
    ['', 0, 0, 0, 0, 0, 0, 0, 0],
    ['.text', SHT_PROGBITS, 6, textStart, textEnd - textStart, 0, 0, 8, 0],
    ['.rodata', SHT_PROGBITS, 2, roStart, roEnd - roStart, 0, 0, 8, 0],
    ['.dynsym', 11, 2, dynsymOffset, dynsymSize, 4, 1, 8, 24],
    ['.dynstr', 3, 2, dynstrOffset, dynstrSize, 0, 0, 1, 0],
    ['.rel.dyn', SHT_REL, 2, relOffset, relSize, 3, 0, 8, 16],
    ['.dynamic', 6, 2, dynamicOffset, dynamicSize, 4, 0, 8, 16],
    ['.shstrtab', 3, 0, dynamicOffset + dynamicSize, 0, 0, 0, 1, 0],
  ];
  const shstrtabOffset = dynamicOffset + dynamicSize;
  let shstrtabSize = 0;
  const nameOffsets: number[] = [];
  for (const [name] of table) {
    nameOffsets.push(shstrtabSize);
    out.write(`${name}\0`, shstrtabOffset + shstrtabSize, 'latin1');
    shstrtabSize += name.length + 1;
  }
  (table[7] as (typeof table)[number])[4] = shstrtabSize;
  const shoff = alignUp(shstrtabOffset + shstrtabSize, 8);
  for (const [k, [, type, flags, at, size, link, info, align, entsize]] of table.entries()) {
    const o = shoff + k * 64;
    out.writeUInt32LE(nameOffsets[k] as number, o);
    out.writeUInt32LE(type, o + 4);
    out.writeBigUInt64LE(BigInt(flags), o + 8);
    out.writeBigUInt64LE(BigInt(flags & 2 ? at : 0), o + 16);
    out.writeBigUInt64LE(BigInt(at), o + 24);
    out.writeBigUInt64LE(BigInt(size), o + 32);
    out.writeUInt32LE(link, o + 40);
    out.writeUInt32LE(info, o + 44);
    out.writeBigUInt64LE(BigInt(align), o + 48);
    out.writeBigUInt64LE(BigInt(entsize), o + 56);
  }
  const total = shoff + table.length * 64;

  // Program headers: text (R+X), read-only data through .dynamic (R), and the dynamic table.
  const phdrs: [number, number, number, number][] = [
    [1, 5, textStart, textEnd - textStart],
    [1, 4, roStart, dynamicOffset + dynamicSize - roStart],
    [2, 4, dynamicOffset, dynamicSize],
  ];
  for (const [k, [type, flags, at, size]] of phdrs.entries()) {
    const o = 64 + k * 56;
    out.writeUInt32LE(type, o);
    out.writeUInt32LE(flags, o + 4);
    for (const field of [8, 16, 24]) out.writeBigUInt64LE(BigInt(at), o + field);
    out.writeBigUInt64LE(BigInt(size), o + 32);
    out.writeBigUInt64LE(BigInt(size), o + 40);
    out.writeBigUInt64LE(8n, o + 48);
  }

  const entry = symbols.find((s) => s.name === 'entrypoint');
  const entryBase = entry ? placed.get(entry.shndx) : undefined;
  if (!entry || entryBase === undefined) throw new Error('no entrypoint function');
  out.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0], 0);
  out.writeUInt16LE(3, 16); // ET_DYN
  out.writeUInt16LE(247, 18); // EM_BPF
  out.writeUInt32LE(1, 20);
  out.writeBigUInt64LE(BigInt(entryBase + entry.value), 24);
  out.writeBigUInt64LE(64n, 32);
  out.writeBigUInt64LE(BigInt(shoff), 40);
  out.writeUInt32LE(0, 48); // e_flags 0: SBPF v0
  out.writeUInt16LE(64, 52);
  out.writeUInt16LE(56, 54);
  out.writeUInt16LE(phnum, 56);
  out.writeUInt16LE(64, 58);
  out.writeUInt16LE(table.length, 60);
  out.writeUInt16LE(table.length - 1, 62);
  return new Uint8Array(out.subarray(0, total));
}
