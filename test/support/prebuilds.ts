import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * better-sqlite3's binary from this checkout as prebuild-install's local prebuild, in `dir`
 * (pass it as `npm_config_better_sqlite3_local_prebuilds` to an `npm install`). Its install
 * script would download a prebuilt binary from GitHub or else compile SQLite for minutes on a
 * 2-core machine; this hands it the binary this checkout already built (same version, same
 * Node ABI), the way an offline mirror does. Everything else stays npm's ordinary install.
 */
export function localPrebuilds(dir: string): string {
  const pkgJson = createRequire(import.meta.url).resolve('better-sqlite3/package.json');
  const pkg = path.dirname(pkgJson);
  const { version } = JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string };
  mkdirSync(dir, { recursive: true });
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  execFileSync('tar', ['-czf', path.join(dir, name), '-C', pkg, 'build/Release/better_sqlite3.node']);
  return dir;
}
