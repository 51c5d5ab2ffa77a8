/**
 * Reads the members of a JSON document the daemon sent, checking each one's type, so that a
 * document without what the API promises becomes one `UnexpectedResponse` (thrown by the caller
 * of `decode`) instead of an `undefined` surfacing later in the application.
 */

/** A member missing or of the wrong type; the transport turns it into an `UnexpectedResponse`. */
export class Malformed extends Error {}

export class Document {
  readonly members: Readonly<Record<string, unknown>>;

  constructor(value: unknown, where = "the document") {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new Malformed(`${where} is not a JSON object`);
    }
    this.members = value as Record<string, unknown>;
  }

  string(name: string): string {
    return this.#typed(name, "string", (value): value is string => typeof value === "string");
  }

  number(name: string): number {
    return this.#typed(name, "number", (value): value is number => typeof value === "number");
  }

  boolean(name: string): boolean {
    return this.#typed(name, "boolean", (value): value is boolean => typeof value === "boolean");
  }

  /** Missing and `null` alike are `null` (docs/openapi.yaml: "treat a missing member and null alike"). */
  optionalString(name: string): string | null {
    return this.#optional(name) === null ? null : this.string(name);
  }

  optionalNumber(name: string): number | null {
    return this.#optional(name) === null ? null : this.number(name);
  }

  /** A nested object, or `null` when missing. */
  optionalDocument(name: string): Document | null {
    const value = this.#optional(name);
    return value === null ? null : new Document(value, `member ${name}`);
  }

  document(name: string): Document {
    return new Document(this.members[name], `member ${name}`);
  }

  /** An array of strings; missing or `null` is empty. */
  strings(name: string): string[] {
    const value = this.#optional(name) ?? [];
    if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
      throw new Malformed(`member ${name} is not an array of strings`);
    }
    return [...value];
  }

  /** An array of strings, or `null` when missing (where "none given" differs from "empty"). */
  optionalStrings(name: string): string[] | null {
    return this.#optional(name) === null ? null : this.strings(name);
  }

  /** An array of objects, each made by `build`; missing or `null` is empty. */
  array<T>(name: string, build: (item: Document) => T): T[] {
    const value = this.#optional(name) ?? [];
    if (!Array.isArray(value)) throw new Malformed(`member ${name} is not an array`);
    return value.map((item) => build(new Document(item, `an item of ${name}`)));
  }

  /** An object of strings (labels); missing or `null` is empty. */
  labels(name: string): Record<string, string> {
    const value = this.#optional(name) ?? {};
    const members = new Document(value, `member ${name}`).members;
    if (!Object.values(members).every((item) => typeof item === "string")) {
      throw new Malformed(`member ${name} is not an object of strings`);
    }
    return { ...(members as Record<string, string>) };
  }

  /** The whole document, copied: what a newer daemon added is kept here. */
  raw(): Record<string, unknown> {
    return { ...this.members };
  }

  #optional(name: string): unknown {
    return this.members[name] ?? null;
  }

  #typed<T>(name: string, kind: string, check: (value: unknown) => value is T): T {
    const value = this.members[name];
    if (!check(value)) {
      throw new Malformed(value === undefined ? `the document lacks ${name}` : `member ${name} is not a ${kind}`);
    }
    return value;
  }
}
