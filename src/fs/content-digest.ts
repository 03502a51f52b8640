/**
 * ContentDigest: a SHA-256 that verified writes feed on the thread pool, so a large copy is
 * hashed where it is written instead of on the JS thread (see
 * {@link SecureFile.writeVerifiedAsync}).
 */
import { native, type NativeDigest } from "../native/index.js";
import { unwrap } from "./call.js";

/**
 * A SHA-256 in progress, held by the addon. Verified writes add to it on the thread pool;
 * {@link ContentDigest.hex} reads it out. One write at a time may feed it, in file order.
 */
export class ContentDigest {
  readonly #native: NativeDigest;

  private constructor(digest: NativeDigest) {
    this.#native = digest;
  }

  /** A new, empty digest. */
  static create(): ContentDigest {
    return new ContentDigest(unwrap(native.createDigest(), "createDigest"));
  }

  /** @internal The addon's object, for the calls that feed it. */
  get native(): NativeDigest {
    return this.#native;
  }

  /**
   * The lowercase hex SHA-256 of every byte added so far; the digest then starts afresh.
   * Throws `invalid_argument` while a write is still adding to it.
   */
  hex(): string {
    return unwrap(native.finishDigest(this.#native), "finishDigest");
  }
}
