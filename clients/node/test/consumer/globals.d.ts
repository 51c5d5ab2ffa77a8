// The one global examples/readme.mjs uses that ECMAScript does not declare; everything else the
// consumer sees comes from the package's own declarations.
declare const console: { log(...values: unknown[]): void };
