// Records `read_media_file` results of @modelcontextprotocol/server-filesystem (what
// server-filesystem-media.json holds). In an empty folder:
//
//   npm install @modelcontextprotocol/server-filesystem@2026.8.31
//   node record_media.mjs > media.json
//
// then shorten the served folder's path to /data in media.json. It makes its own files
// in ./data: a PNG of about 30 KB (noise over a gradient, which compresses as a photo
// does), a tenth of a second of a 440 Hz tone as WAV, and 600 bytes of another type.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { deflateSync } from "node:zlib";

const dir = path.resolve("data");
mkdirSync(dir, { recursive: true });

let seed = 40;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) % 256;

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (bytes) => {
  let c = 0xffffffff;
  for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type, data) => {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
};
const [width, height] = [128, 104];
const rows = [];
for (let y = 0; y < height; y++) {
  rows.push(0);
  for (let x = 0; x < width; x++) {
    const n = random();
    rows.push((x * 2 + (n >> 2)) % 256, (y * 2 + Math.floor(n / 3)) % 256, n);
  }
}
const header = Buffer.alloc(13);
header.writeUInt32BE(width, 0);
header.writeUInt32BE(height, 4);
header.set([8, 2, 0, 0, 0], 8);
writeFileSync(
  path.join(dir, "chart.png"),
  Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.from(rows), { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]),
);

const samples = Buffer.alloc(1600);
for (let i = 0; i < 800; i++) samples.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000)), i * 2);
const wav = Buffer.alloc(44);
wav.write("RIFF", 0);
wav.writeUInt32LE(36 + samples.length, 4);
wav.write("WAVEfmt ", 8);
wav.writeUInt32LE(16, 16);
wav.writeUInt16LE(1, 20);
wav.writeUInt16LE(1, 22);
wav.writeUInt32LE(8000, 24);
wav.writeUInt32LE(16000, 28);
wav.writeUInt16LE(2, 32);
wav.writeUInt16LE(16, 34);
wav.write("data", 36);
wav.writeUInt32LE(samples.length, 40);
writeFileSync(path.join(dir, "beep.wav"), Buffer.concat([wav, samples]));
writeFileSync(path.join(dir, "archive.bin"), Buffer.from(Array.from({ length: 600 }, random)));

const transport = new StdioClientTransport({
  command: "node",
  args: ["node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", dir],
});
const client = new Client({ name: "record", version: "1" });
await client.connect(transport);
const calls = [];
for (const file of ["chart.png", "beep.wav", "archive.bin"]) {
  const result = await client.callTool({ name: "read_media_file", arguments: { path: path.join(dir, file) } });
  calls.push({ tool: "read_media_file", result });
}
process.stdout.write(JSON.stringify(calls, null, 1) + "\n");
await client.close();
