/**
 * Image-shaped test data: PNG bytes (signature, header chunk, seeded noise standing in for compressed pixels, end
 * chunk) and the base64 data URL a provider payload carries them as. The same size and seed give the same bytes.
 */
import { seededRandom } from "./session-corpus.js";

const PNG_START = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52];
const PNG_END = [0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82];

/** `size` bytes (at least 28) that look like a PNG file. */
export function pngBytes(size: number, seed = 1): Buffer {
  const random = seededRandom(seed);
  const bytes = Buffer.alloc(size);
  bytes.set(PNG_START);
  for (let i = PNG_START.length; i < size - PNG_END.length; i++) bytes[i] = Math.floor(random() * 256);
  bytes.set(PNG_END, size - PNG_END.length);
  return bytes;
}

/** `data:image/png;base64,…` of {@link pngBytes}. */
export function pngDataUrl(size: number, seed = 1): string {
  return `data:image/png;base64,${pngBytes(size, seed).toString("base64")}`;
}
