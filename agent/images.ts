import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The node's image catalogue (`<images dir>/catalogue.json`), written by fixtures/images/build.ts:
 * reference as services name it → the containerd name, the manifest digest and the OCI archive.
 */
export interface CatalogueEntry {
  /** The name the image has inside containerd after import. */
  name: string;
  /** Manifest digest: what the node declares and observations carry. */
  digest: string;
  /** OCI archive, relative to the catalogue's directory. */
  archive: string;
}

export type Catalogue = Record<string, CatalogueEntry>;

export function readCatalogue(dir: string): Catalogue {
  const file = join(dir, 'catalogue.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Catalogue) : {};
}
